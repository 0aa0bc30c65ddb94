#!/usr/bin/env bash
# All-reduce on Gloo, 2 ranks over loopback: dtrain's bench_allreduce and
# torch.distributed (benchmarks/peers/allreduce_torch.py) interleaved in
# rounds -- dtrain then torch, then torch then dtrain, ... -- so that both
# see the same machine load; the report takes the median over rounds of
# each harness's own median over repeats. Both sides use 1 intra-op thread.
# Output: benchmarks/results/allreduce_gloo.csv (+ .png when matplotlib is
# importable by the venv's python).
#
#   bash benchmarks/run_allreduce.sh [--rounds 5] [flags for both harnesses, e.g. --repeats 5]
#   bash benchmarks/run_allreduce.sh --quick [--rounds 2]
#
# DTRAIN_RESULTS_DIR=DIR writes the CSV and plot there instead of
# benchmarks/results (for a trial run that must not replace the committed ones).
# --quick (a smoke run, about 10 s: 4 KiB and 1 MiB, 2 repeats, 2 rounds so
# that both orders run; no harness flags with it) writes into
# $DTRAIN_BUILD_DIR/bench-quick unless DTRAIN_RESULTS_DIR says where (CTest's
# bench.allreduce runs it).
#
# Environment: DTRAIN_BUILD_DIR (default build) holds bench_allreduce;
# DTRAIN_PYTHON, else $DTRAIN_HOME/venv/bin/python (DTRAIN_HOME default
# ~/.cache/dtrain), is the python with the same torch wheel.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_allreduce

rounds=""
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    *) break ;;
  esac
done
if [[ $quick == 1 ]]; then
  # Both harnesses refuse a flag given twice, so --quick's are the only ones.
  (($# == 0)) || { echo "$runner: --quick takes no harness flags (got '$*')" >&2; exit 2; }
  quick_results
  rounds="${rounds:-2}"
  set -- --sizes 4096,1048576 --repeats 2 --warmup 1
fi
rounds="${rounds:-5}"

require_python

run_dtrain() {
  echo "== round $1: dtrain (bench_allreduce), $(uptime | sed 's/.*load/load/')"
  "$bench" --world-size 2 --threads 1 --port "$(port)" --csv "$scratch/dtrain_$1.csv" "${@:2}"
}
run_torch() {
  echo "== round $1: torch.distributed (allreduce_torch.py), $(uptime | sed 's/.*load/load/')"
  "$python" "$root/benchmarks/peers/allreduce_torch.py" --world-size 2 --threads 1 \
    --port "$(port)" --csv "$scratch/torch_$1.csv" "${@:2}"
}

load_before="$(cut -d" " -f1 /proc/loadavg)"
for ((round = 1; round <= rounds; ++round)); do
  if ((round % 2)); then
    run_dtrain "$round" "$@"
    run_torch "$round" "$@"
  else
    run_torch "$round" "$@"
    run_dtrain "$round" "$@"
  fi
done
load_after="$(cut -d" " -f1 /proc/loadavg)"

png=""
if "$python" -c 'import matplotlib' 2>/dev/null; then
  png="$results/allreduce_gloo.png"
else
  echo "run_allreduce.sh: matplotlib is not in $python; no plot ($python -m pip install matplotlib)" >&2
fi
"$python" "$root/benchmarks/report/allreduce_report.py" --baseline torch \
  --out "$results/allreduce_gloo.csv" ${png:+--png "$png"} \
  --load "1-min load average $load_before before, $load_after after" "$scratch"/*.csv
echo "1-min load average: $load_before before, $load_after after"
