#!/usr/bin/env bash
# The README's run command: installs whatever is missing, builds dtrain and
# runs the main job -- data-parallel training of a PointNet++ classifier on
# the embedded synthetic shapes (generated on first use, no download), two
# processes under dtrun (DDP over Gloo, each process one half of every
# epoch) -- writing out/train_pointnet2.csv. Extra arguments go to the
# program after these defaults, so they override them (see --help);
# DTRAIN_NPROC sets the process count; DTRAIN_APP=train_partseg runs
# PointNet++ part segmentation on the same shapes, DTRAIN_APP=train_toycnn
# the seed tutorial's toy CNN on Fashion-MNIST instead.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

app="${DTRAIN_APP:-train_pointnet2}"
case "$app" in
  # PointNet++'s rate schedule (x0.7 every 20 epochs) is for runs of 200
  # epochs and never turns in 5; a cosine over the run ends any --epochs
  # settled (classification, seeds 0-7: 81-92% in 5 epochs, where the
  # constant rate gave 71-89%; seed 0 in 20 epochs: 99.2% against 88.4%).
  train_pointnet2)
    defaults=(--model ssg-lite --num-points 512 --epochs 5 --lr-schedule cosine)
    what="PointNet++ (ssg-lite) on the synthetic shapes" ;;
  train_partseg)
    defaults=(--model ssg-lite --num-points 512 --epochs 5 --lr-schedule cosine)
    what="PointNet++ part segmentation (ssg-lite) on the synthetic shapes' parts" ;;
  train_toycnn)
    defaults=()
    what="the toy CNN on Fashion-MNIST" ;;
  *)
    echo "run.sh: DTRAIN_APP must be train_pointnet2, train_partseg or train_toycnn, got '$app'" >&2
    exit 2 ;;
esac

bash "$DTRAIN_REPO/scripts/bootstrap.sh"
dtrain_build "$app" dtrun
cd "$DTRAIN_REPO"
# --help (--help TOPIC, --help-all) is the app's, printed once (not by every process).
for arg in "$@"; do
  if [[ "$arg" == "--help" || "$arg" == "-h" || "$arg" == "--help-all" ]]; then
    exec "$DTRAIN_BUILD_DIR/apps/$app/$app" "$@"
  fi
done
nproc_per_node="${DTRAIN_NPROC:-2}"
dtrain_log "training $what with $nproc_per_node processes (dtrun)"
exec "$DTRAIN_BUILD_DIR/apps/dtrun/dtrun" --standalone --nproc-per-node "$nproc_per_node" \
  "$DTRAIN_BUILD_DIR/apps/$app/$app" "${defaults[@]}" "$@"
