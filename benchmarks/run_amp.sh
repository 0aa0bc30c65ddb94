#!/usr/bin/env bash
# Toy CNN training steps on CPU with and without bf16 autocast: dtrain's
# bench_amp_toycnn and torch.autocast (benchmarks/peers/amp_toycnn_torch.py)
# in rounds: each round runs every configuration once in each program, one
# process per configuration (peak RSS is per process), interleaved so that
# drifting machine load falls on both. The report (Note [Benchmark verdicts]
# in benchmarks/report/stats.py) compares dtrain with torch in each precision
# and each one's bf16 step with its fp32 step, into
# benchmarks/results/amp_toycnn_cpu.csv (+ amp_toycnn_cpu_rounds.csv, .png).
# Both programs also take --device cuda and --precision fp16.
#
#   bash benchmarks/run_amp.sh [--quick] [--rounds 5]
#
# About 3 minutes on 2 cores. --quick (a smoke run, about 15 s: batch 16
# alone unless BATCH_SIZES says otherwise, one round of 2 steps) writes into
# $DTRAIN_BUILD_DIR/bench-quick unless DTRAIN_RESULTS_DIR says where (CTest's
# bench.amp runs it); DTRAIN_RESULTS_DIR=DIR writes elsewhere than
# benchmarks/results.
#
# Environment: DTRAIN_BUILD_DIR (default build) holds bench_amp_toycnn;
# DTRAIN_PYTHON, else $DTRAIN_HOME/venv/bin/python (DTRAIN_HOME default
# ~/.cache/dtrain), is the python with the same torch wheel; BATCH_SIZES
# (default "256 1024").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_amp_toycnn
batches="${BATCH_SIZES:-256 1024}"
rounds=5 warmup=3 steps=8
while (($#)); do
  case "$1" in
    --quick) quick_results; batches="${BATCH_SIZES:-16}" rounds=1 warmup=1 steps=2; shift ;;
    --rounds) rounds="$2"; shift 2 ;;
    *) echo "$runner: unknown argument '$1' (--quick, --rounds)" >&2; exit 2 ;;
  esac
done
require_python

flags=(--warmup "$warmup" --steps "$steps" --threads 1)
for ((round = 1; round <= rounds; round++)); do
  echo "== round $round/$rounds, $(uptime | sed 's/.*load/load/')"
  r="$(printf %03d "$round")"  # the report numbers rounds in file-name order
  for batch in $batches; do
    for precision in off bf16; do
      "$bench" --precision "$precision" --batch-size "$batch" "${flags[@]}" \
        --csv "$scratch/raw-$r-$batch-$precision-dtrain.csv"
      "$python" "$root/benchmarks/peers/amp_toycnn_torch.py" --precision "$precision" \
        --batch-size "$batch" "${flags[@]}" --csv "$scratch/raw-$r-$batch-$precision-torch.csv"
    done
  done
done

report amp_toycnn_cpu amp \
  "1 thread per process; one process per configuration and round; $warmup warm-up and $steps timed steps (median) per process; $rounds rounds; $host_memory" \
  "dtrain fp32:torch fp32,dtrain bf16:torch bf16,dtrain bf16:dtrain fp32,torch bf16:torch fp32" \
  "Toy CNN step on the CPU with and without bf16 autocast, dtrain against torch.autocast" \
  --extra peak_rss_mb -- "$scratch"/raw-*.csv
echo "report: $results/amp_toycnn_cpu.csv"
