#!/usr/bin/env bash
# Batch norm (training) + ReLU, forward and backward, on the channels-last
# CPU activations of PointNet++'s set abstractions: LibTorch's pair against
# dtrain's fused op (bench_batch_norm_relu, one process per dtype, the two
# taking turns step by step after a check that they agree), in float32 and
# in bfloat16 activations. The report (Note [Benchmark verdicts] in
# benchmarks/report/stats.py) goes to benchmarks/results/batch_norm_relu_cpu.csv
# (+ _rounds.csv, .png).
#
#   bash benchmarks/run_batch_norm_relu.sh [--quick] [--steps 10]
#
# About a minute on 2 cores. --quick (a smoke run: float32 alone, 2 steps)
# writes into $DTRAIN_BUILD_DIR/bench-quick unless DTRAIN_RESULTS_DIR says
# where (CTest's bench.batch_norm_relu runs it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_batch_norm_relu
dtypes="float32 bfloat16" warmup=2 steps=10
while (($#)); do
  case "$1" in
    --quick) quick_results; dtypes=float32 warmup=1 steps=2; shift ;;
    --steps) steps="$2"; shift 2 ;;
    *) echo "$runner: unknown argument '$1' (--quick, --steps)" >&2; exit 2 ;;
  esac
done
require_python
threads="$(nproc)"
for dtype in $dtypes; do
  echo "== $dtype, $(uptime | sed 's/.*load/load/')"
  "$bench" --dtype "$dtype" --threads "$threads" --warmup "$warmup" --steps "$steps" \
    --csv "$scratch/raw.csv"
done
report batch_norm_relu_cpu bnrelu \
  "one process per dtype, $threads intra-op threads; a round is one forward and backward of each, in turn; $warmup warm-up rounds, $steps timed; parameters float32; $host_memory" \
  "dtrain_fused:libtorch_batch_norm_relu" \
  "Batch norm + ReLU on channels-last CPU activations: dtrain's fused op against LibTorch's pair" \
  -- "$scratch/raw.csv"
echo "report: $results/batch_norm_relu_cpu.csv"
