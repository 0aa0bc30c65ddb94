#!/usr/bin/env bash
# Toy CNN training steps on CPU with and without bf16 autocast: dtrain's
# bench_amp_toycnn and torch.autocast (benchmarks/peers/amp_toycnn_torch.py)
# in the same run, one process per configuration, merged into
# benchmarks/results/amp_toycnn_cpu.csv, with a table of the ratios and a
# plot (amp_toycnn_cpu.png, benchmarks/report/amp_report.py; the plot needs
# matplotlib in that python). Both also take --device cuda and
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

head -n 1 "$scratch/1.csv" > "$scratch/merged.csv"
for i in $(seq 1 "$n"); do tail -n +2 "$scratch/$i.csv" >> "$scratch/merged.csv"; done
mv "$scratch/merged.csv" "$out"  # whole, or the previous results stay
echo "== $out"
if "$python" -c 'import matplotlib' 2>/dev/null; then
  "$python" "$root/benchmarks/report/amp_report.py" --csv "$out" --png "${out%.csv}.png"
else
  "$python" "$root/benchmarks/report/amp_report.py" --csv "$out"
  echo "$runner: matplotlib is not in $python; no plot ($python -m pip install matplotlib)" >&2
fi
