#!/usr/bin/env bash
# All-reduce on dtrain's mpi backend beside raw MPI_Allreduce in the same
# program (torch's wheel has no MPI backend), 2 ranks under mpirun over TCP
# loopback, in rounds; the report (Note [Benchmark verdicts] in
# benchmarks/report/stats.py) gives the median over rounds with the
# quartiles, the fastest round and the verdict. Output:
# benchmarks/results/allreduce_mpi.csv, allreduce_mpi_rounds.csv and
# allreduce_mpi.png (with matplotlib). About a minute on 2 cores.
#
#   bash benchmarks/run_allreduce_mpi.sh [--rounds 5] [--np 2] [flags for bench_allreduce;
#                                         default --repeats 7 --big-repeats 3]
#   bash benchmarks/run_allreduce_mpi.sh --quick [--rounds 2] [--np 2]
#
# DTRAIN_RESULTS_DIR=DIR writes the CSV and plot there instead of
# benchmarks/results (for a trial run that must not replace the committed ones).
# --quick (a smoke run, about 5 s: 4 KiB and 1 MiB, 2 repeats, 2 rounds; no
# bench_allreduce flags with it) writes into $DTRAIN_BUILD_DIR/bench-quick
# unless DTRAIN_RESULTS_DIR says where (CTest's bench.allreduce_mpi runs it).
#
# mpirun runs as root only with --allow-run-as-root, and more ranks than
# cores only with --oversubscribe; both are passed here, as in the tests.
# Environment: DTRAIN_BUILD_DIR, DTRAIN_PYTHON (see run_allreduce.sh), MPIRUN.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_allreduce
mpirun="${MPIRUN:-mpirun}"

rounds=""
np=2
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --np) np="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    *) break ;;
  esac
done
if [[ $quick == 1 ]]; then
  # bench_allreduce refuses a flag given twice, so --quick's are the only ones.
  (($# == 0)) || { echo "$runner: --quick takes no bench_allreduce flags (got '$*')" >&2; exit 2; }
  quick_results
  rounds="${rounds:-2}"
  set -- --sizes 4096,1048576 --repeats 2 --warmup 1
fi
rounds="${rounds:-5}"
(($#)) || set -- --repeats 7 --big-repeats 3
harness=("$@")

command -v "$mpirun" >/dev/null || { echo "run_allreduce_mpi.sh: no $mpirun (apt-get install openmpi-bin)" >&2; exit 1; }
require_python

load_before="$(cut -d" " -f1 /proc/loadavg)"
for ((round = 1; round <= rounds; ++round)); do
  echo "== round $round: dtrain mpi backend + raw MPI_Allreduce, $(uptime | sed 's/.*load/load/')"
  # Below the ephemeral range, where mpirun's own sockets cannot hold it.
  master_port="$(port)"
  "$mpirun" --allow-run-as-root --oversubscribe --bind-to none \
    --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
    -np "$np" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$master_port" \
    "$bench" --backend mpi --threads 1 --csv "$scratch/mpi_$round.csv" "$@"
done
load_after="$(cut -d" " -f1 /proc/loadavg)"

report allreduce_mpi allreduce \
  "mpirun -np $np over TCP loopback (btl self,tcp); 1 intra-op thread per rank; bench_allreduce flags: ${harness[*]:-defaults}; raw MPI_Allreduce timed right after dtrain's on the same buffer in every repeat; per size the median of a run's repeats, each the slowest rank's time per call; $rounds rounds; 1-min load average $load_before before, $load_after after; $host_memory" \
  "dtrain:mpi" "All-reduce SUM float32 under mpirun, 2 ranks over TCP loopback: dtrain's mpi backend against raw MPI_Allreduce" --extra bytes busbw_gbps -- "$scratch"/mpi_*.csv
echo "1-min load average: $load_before before, $load_after after; report: $results/allreduce_mpi.csv"
