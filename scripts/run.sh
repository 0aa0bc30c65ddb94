#!/usr/bin/env bash
# The README's run command: installs whatever is missing, builds dtrain and
# runs the main job -- data-parallel training of the toy CNN on
# Fashion-MNIST, two processes under dtrun (DDP over Gloo, each process one
# half of every epoch) -- writing out/train_toycnn.csv. Extra arguments go
# to train_toycnn (see its --help); DTRAIN_NPROC sets the process count.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bash "$DTRAIN_REPO/scripts/bootstrap.sh"
dtrain_build train_toycnn dtrun
cd "$DTRAIN_REPO"
nproc_per_node="${DTRAIN_NPROC:-2}"
dtrain_log "training the toy CNN on Fashion-MNIST with $nproc_per_node processes (dtrun)"
exec "$DTRAIN_BUILD_DIR/apps/dtrun/dtrun" --standalone --nproc-per-node "$nproc_per_node" \
  "$DTRAIN_BUILD_DIR/apps/train_toycnn/train_toycnn" "$@"
