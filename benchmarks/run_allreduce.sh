#!/usr/bin/env bash
# All-reduce on Gloo, 2 ranks over loopback: dtrain's bench_allreduce and
# torch.distributed (benchmarks/peers/allreduce_torch.py) interleaved in
# rounds -- dtrain then torch, then torch then dtrain, ... -- so that both
# see the same machine load. A round's figure per size is each harness's
# median over its repeats; the report (Note [Benchmark verdicts] in
# benchmarks/report/stats.py) gives the median over rounds with the
# quartiles, the fastest round and the verdict. Both sides use 1 intra-op
# thread and the same host-memory policy. Output:
# benchmarks/results/allreduce_gloo.csv, allreduce_gloo_rounds.csv and
# allreduce_gloo.png (with matplotlib). About 2 minutes on 2 cores.
#
#   bash benchmarks/run_allreduce.sh [--rounds 7] [flags for both harnesses; default
#                                     --repeats 7 --big-repeats 3]
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
rounds="${rounds:-7}"
(($#)) || set -- --repeats 7 --big-repeats 3
harness=("$@")

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

report allreduce_gloo allreduce \
  "2 ranks over loopback; 1 intra-op thread per rank; harness flags: ${harness[*]:-defaults}; a round is one run of each harness, order alternating; per size the median of a run's repeats, each the slowest rank's time per call after a barrier; $rounds rounds; 1-min load average $load_before before, $load_after after; $host_memory" \
  "dtrain:torch" "All-reduce SUM float32 on Gloo, 2 ranks over loopback: dtrain against torch.distributed" --extra bytes busbw_gbps -- "$scratch"/dtrain_*.csv "$scratch"/torch_*.csv
echo "1-min load average: $load_before before, $load_after after; report: $results/allreduce_gloo.csv"
