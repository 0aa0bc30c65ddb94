#!/usr/bin/env bash
# What PointNeXt's training recipe (configs/train_pointnet2/pointnext.yaml:
# AdamW with weight decay 0.05 off norms and biases, clipping at norm 1,
# label smoothing 0.2) gives on the synthetic shapes against the main
# job's own (Adam with weight decay 1e-4), everything else alike: the main
# job of scripts/run.sh (train_pointnet2 under dtrun, two processes,
# ssg-lite on 512 points, batches of 16 a process, a cosine over the run),
# once per seed and recipe.
#
#   bash benchmarks/run_recipes.sh [--seeds 0-4] [--epochs 10]
#       [--out benchmarks/results/recipes_cpu.csv]
#
# One row per run: the commit and machine, recipe, seed, epochs, and the
# last epoch's test accuracy and test loss. About 8 minutes on 2 cores.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

seeds="0-4" epochs=10
out="$DTRAIN_REPO/benchmarks/results/recipes_cpu.csv"
while (($#)); do
  case "$1" in
    --seeds) seeds="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "run_recipes.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
dtrain_seed_range "$seeds"

dtrain_main_job_runs "$out"
main_job=(--model ssg-lite --num-points 512 --batch-size 16 --lr-schedule cosine --epochs "$epochs")
declare -A recipe_flags=(
  [main job]=""
  [pointnext]="--config $DTRAIN_REPO/configs/train_pointnet2/pointnext.yaml"
)
echo "commit,machine,recipe,seed,epochs,test_accuracy,test_loss" >"$out"
for ((seed = first_seed; seed <= last_seed; seed++)); do
  for recipe in "main job" pointnext; do
    read -r -a extra <<<"${recipe_flags[$recipe]}"
    # The config first: the main job's flags after it win (model, points, batch, epochs).
    row="$(dtrain_main_job "$work/run.csv" test_accuracy,test_loss ${extra[@]+"${extra[@]}"} \
      "${main_job[@]}" --seed "$seed")"
    echo "$bench_commit,$bench_machine,$recipe,$seed,$epochs,$row" >>"$out"
    dtrain_log "$recipe, seed $seed: test accuracy ${row%%,*}"
  done
done
dtrain_log "wrote $out"
