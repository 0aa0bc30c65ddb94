#!/usr/bin/env bash
# Toy CNN training steps on CPU with and without bf16 autocast: dtrain's
# bench_amp_toycnn and torch.autocast (benchmarks/peers/amp_toycnn_torch.py)
# in the same run, one process per configuration, merged into
# benchmarks/results/amp_toycnn_cpu.csv. Both also take --device cuda and
# --precision fp16; tests/gpu/run_gpu_checks.sh runs them on the GPU.
#
#   bash benchmarks/run_amp.sh [--quick] [extra flags for both, e.g. --steps 100 --threads 2]
#
# DTRAIN_RESULTS_DIR=DIR writes the CSV and plot there instead of
# benchmarks/results (for a trial run that must not replace the committed ones).
# --quick (a smoke run, about 10 s: batch 16 alone unless BATCH_SIZES says
# otherwise) writes into $DTRAIN_BUILD_DIR/bench-quick unless
# DTRAIN_RESULTS_DIR says where (CTest's bench.amp runs it).
#
# Environment: DTRAIN_BUILD_DIR (default build) holds bench_amp_toycnn;
# DTRAIN_PYTHON, else $DTRAIN_HOME/venv/bin/python (DTRAIN_HOME default
# ~/.cache/dtrain), is the python with the same torch wheel; BATCH_SIZES
# (default "64 256 1024").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_amp_toycnn
batches="${BATCH_SIZES:-64 256 1024}"
if [[ "${1:-}" == "--quick" ]]; then
  shift
  quick_results
  batches="${BATCH_SIZES:-16}"
fi
out="$results/amp_toycnn_cpu.csv"

require_python

n=0
for batch in $batches; do
  for precision in off bf16; do
    # Interleaved, so drifting machine load hits both implementations alike.
    n=$((n + 1))
    "$bench" --precision "$precision" --batch-size "$batch" --csv "$scratch/$n.csv" "$@"
    n=$((n + 1))
    "$python" "$root/benchmarks/peers/amp_toycnn_torch.py" --precision "$precision" \
      --batch-size "$batch" --csv "$scratch/$n.csv" "$@"
  done
done

head -n 1 "$scratch/1.csv" > "$out"
for i in $(seq 1 "$n"); do tail -n +2 "$scratch/$i.csv" >> "$out"; done
echo "== $out"
column -s, -t < "$out" 2>/dev/null || cat "$out"
