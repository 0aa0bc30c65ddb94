#!/usr/bin/env bash
# Whether a step pays for --checkpoint: the main job (train_pointnet2 under
# dtrun, two processes, ssg-lite on 512 points, as scripts/run.sh runs it)
# with --checkpoint, where the ranks agree on a stop every 4 steps (Note
# [Agreeing on a stop] in sdk/src/train/train_epoch.cpp) and rank 0 writes
# a checkpoint in the background after each epoch, against the same job
# without, taking turns round after round. A round's time is the mean step
# of the job's last epoch (its report's step_ms on rank 0). The report (Note
# [Benchmark verdicts] in benchmarks/report/stats.py) goes to
# benchmarks/results/checkpoint_steps_cpu.csv (+ _rounds.csv, .png). About
# 5 minutes on 2 cores.
#
#   bash benchmarks/run_checkpoint_steps.sh [--quick] [--rounds 7] [--epochs 2]
#
# --quick (one round of one epoch) writes into $DTRAIN_BUILD_DIR/bench-quick
# unless DTRAIN_RESULTS_DIR says where.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" ../apps/train_pointnet2/train_pointnet2
rounds=7
epochs=2
while (($#)); do
  case "$1" in
    --quick) quick_results; rounds=1; epochs=1; shift ;;
    --rounds) rounds="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    *) echo "$runner: unknown argument '$1' (--quick, --rounds, --epochs)" >&2; exit 2 ;;
  esac
done
require_python
dtrun="$build/apps/dtrun/dtrun"
[[ -x "$dtrun" ]] || { echo "$runner: $dtrun is not built (ninja -C $build dtrun)" >&2; exit 1; }
raw="$scratch/raw.csv"
echo "case,impl,round,ms" >"$raw"
job=(--model ssg-lite --num-points 512 --lr-schedule cosine --epochs "$epochs" --threads 1)

# One run of the job; its last epoch's step_ms as a row of the raw CSV.
run_job() {
  local impl="$1" round="$2" csv="$scratch/$1.csv"
  shift 2
  rm -f "$csv" "$scratch/run.pt"
  "$dtrun" --standalone --nproc-per-node 2 "$bench" "${job[@]}" --csv "$csv" "$@" >/dev/null
  "$python" - "$csv" "$impl" "$round" >>"$raw" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"main job ssg-lite 2 processes,{sys.argv[2]},{sys.argv[3]},{rows[-1]['step_ms']}")
PY
}

for ((round = 1; round <= rounds; round++)); do
  echo "== round $round/$rounds"
  run_job "with --checkpoint" "$round" --checkpoint "$scratch/run.pt"
  run_job "without" "$round"
done
report checkpoint_steps_cpu plain \
  "train_pointnet2 --model ssg-lite --num-points 512, 2 processes under dtrun, 1 thread each, the last of $epochs epochs' mean step; $rounds rounds; $host_memory" \
  "with --checkpoint:without" \
  "The main job's step with --checkpoint against without" -- "$raw"
echo "report: $results/checkpoint_steps_cpu.csv"
