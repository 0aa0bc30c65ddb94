#!/usr/bin/env bash
# How long a training step waits for a checkpoint of a PointNet++ classifier
# with Adam's state: dtrain's blocking save_checkpoint and CheckpointWriter's
# background write (bench_checkpoint) beside torch.save
# (benchmarks/peers/checkpoint_torch.py), in the same run, taking turns
# round after round; the report (Note [Benchmark verdicts] in
# benchmarks/report/stats.py) goes to benchmarks/results/checkpoint_cpu.csv
# (+ checkpoint_cpu_rounds.csv, .png). About a minute on 2 cores.
#
#   bash benchmarks/run_checkpoint.sh [--quick] [--rounds 3] [--repeats 7]
#
# The files go to a temporary directory (mktemp's, usually under /tmp: the
# disk under test; set DTRAIN_CHECKPOINT_DIR to time another). DTRAIN_RESULTS_DIR=DIR
# writes the CSV there instead of benchmarks/results (for a trial run that
# must not replace the committed one). --quick (a smoke run, a few seconds:
# ssg-lite, 2 repeats, one round) writes into $DTRAIN_BUILD_DIR/bench-quick
# unless DTRAIN_RESULTS_DIR says where (CTest's bench.checkpoint runs it).
# Environment as the other runners (DTRAIN_BUILD_DIR, DTRAIN_PYTHON).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_checkpoint
presets="ssg-lite ssg"
rounds=5
repeats=5
while (($#)); do
  case "$1" in
    --quick) quick_results; presets="ssg-lite"; rounds=1; repeats=2; shift ;;
    --rounds) rounds="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    *) echo "$runner: unknown argument '$1' (--quick, --rounds, --repeats)" >&2; exit 2 ;;
  esac
done
require_python
files="${DTRAIN_CHECKPOINT_DIR:-$scratch/files}"
raw="$scratch/raw.csv"

for ((round = 1; round <= rounds; round++)); do
  for preset in $presets; do
    echo "== round $round/$rounds, $preset"
    "$bench" --preset "$preset" --repeats "$repeats" --dir "$files" --csv "$raw"
    "$python" "$root/benchmarks/peers/checkpoint_torch.py" --preset "$preset" \
      --repeats "$repeats" --dir "$files" --csv "$raw"
  done
done
report checkpoint_cpu checkpoint \
  "files in $(df --output=source "$files" | tail -n 1) ($(df --output=fstype "$files" | tail -n 1)); per process the median of $repeats saves after one untimed; $rounds rounds; PointNet++ with Adam's state; $host_memory" \
  "dtrain background:torch blocking,dtrain blocking:torch blocking,dtrain background:torch no_flush" \
  "How long a training step waits for a checkpoint: dtrain against torch.save" \
  --extra file_mb -- "$raw"
echo "report: $results/checkpoint_cpu.csv"
