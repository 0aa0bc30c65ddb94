#!/usr/bin/env bash
# The range of test accuracy the README's main job reaches on the CPU over
# seeds, per precision: scripts/run.sh's job (train_pointnet2 under dtrun,
# two processes, ssg-lite on 512 points, a cosine over 5 epochs) once per
# seed and precision. The GPU checks compare the main job on CUDA with it
# (a GPU adds in another order, so its run is like another seed).
#
#   bash benchmarks/run_main_job_seeds.sh [--seeds 0-7] [--precisions fp32,bf16] [--epochs 5]
#       [--out benchmarks/results/main_job_cpu_seeds.csv]
#
# One row per run: the commit and machine, precision, seed, epochs, the last
# epoch's test accuracy and samples/s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

seeds="0-7" precisions="fp32,bf16" epochs=5
out="$DTRAIN_REPO/benchmarks/results/main_job_cpu_seeds.csv"
while (($#)); do
  case "$1" in
    --seeds) seeds="$2"; shift 2 ;;
    --precisions) precisions="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "run_main_job_seeds.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
dtrain_seed_range "$seeds"

dtrain_main_job_runs "$out"
echo "commit,machine,precision,seed,epochs,test_accuracy,samples_per_s" >"$out"
for precision in ${precisions//,/ }; do
  amp="$precision"
  [[ $precision == fp32 ]] && amp=off
  for ((seed = first_seed; seed <= last_seed; seed++)); do
    # The last epoch's row: test_accuracy and samples_per_s by column name.
    row="$(dtrain_main_job "$work/$precision-$seed.csv" test_accuracy,samples_per_s \
      --model ssg-lite --num-points 512 --epochs "$epochs" --lr-schedule cosine --amp "$amp" \
      --seed "$seed")"
    echo "$bench_commit,$bench_machine,$precision,$seed,$epochs,$row" >>"$out"
    dtrain_log "$precision seed $seed: test accuracy ${row%%,*}"
  done
done
dtrain_log "wrote $out"
