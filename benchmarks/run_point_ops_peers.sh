#!/usr/bin/env bash
# dtrain's CPU point ops against the strongest CPU peers a Python user can
# install: furthest point sampling against fpsample (vanilla and bucket
# QuickFPS), kNN, ball query and three-NN against SciPy's cKDTree, on single
# clouds of 1k-131k points and on batches, dtrain on one thread beside the
# one-thread peers and on every core beside them
# (benchmarks/peers/point_ops_peers.py, one process, one call each per
# round). The report (Note [Benchmark verdicts] in benchmarks/report/stats.py)
# goes to benchmarks/results/point_ops_peers_cpu.csv (+ _rounds.csv, .png).
#
#   bash benchmarks/run_point_ops_peers.sh [--quick] [--rounds 7]
#
# The peers are optional packages (fpsample, scipy; pinned in
# benchmarks/requirements-peers.txt) that this runner installs into the venv
# of its python when they are missing (with DTRAIN_BENCH_NO_INSTALL=1 it
# skips instead, exit status 77); nothing else needs them. About a minute
# on 2 cores. --quick (a smoke run, a few seconds: two small
# clouds, one round) writes into $DTRAIN_BUILD_DIR/bench-quick unless
# DTRAIN_RESULTS_DIR says where (CTest's bench.point_ops_peers runs it).
#
# Environment: DTRAIN_BUILD_DIR (default build) holds kernels/libdtrain_kernels.so;
# DTRAIN_PYTHON, else $DTRAIN_HOME/venv/bin/python (DTRAIN_HOME default ~/.cache/dtrain).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_pointnet2_ops
flags=()
rounds=7
while (($#)); do
  case "$1" in
    --quick) quick_results; flags+=(--quick); rounds=1; shift ;;
    --rounds) rounds="$2"; shift 2 ;;
    *) echo "$runner: unknown argument '$1' (--quick, --rounds)" >&2; exit 2 ;;
  esac
done
library="$build/kernels/libdtrain_kernels.so"
[[ -f "$library" ]] || { echo "$runner: $library is not built (ninja -C $build dtrain_kernels)" >&2; exit 1; }
require_peers fpsample scipy
versions="$("$python" -c 'import fpsample, scipy; print(f"fpsample {fpsample.__version__}, scipy {scipy.__version__}")')"

echo "== dtrain beside fpsample and cKDTree, $(uptime | sed 's/.*load/load/')"
"$python" "$root/benchmarks/peers/point_ops_peers.py" --library "$library" --rounds "$rounds" \
  ${flags[@]+"${flags[@]}"} --out "$scratch/raw.csv"
pairs="dtrain_1thread:fpsample_vanilla,dtrain_1thread:fpsample_bucket,dtrain_all_threads:fpsample_bucket"
pairs+=",dtrain_1thread:ckdtree_1worker,dtrain_all_threads:ckdtree_all_workers"
report point_ops_peers_cpu plain \
  "one process; $versions; peers single-threaded, cKDTree also with workers=-1 beside dtrain on all $(nproc) cores; a batch is one dtrain call and a loop over clouds for a peer; cKDTree built in every call; one call each per round after one untimed (the check), order rotating; $rounds rounds ($((rounds < 5 ? rounds : 5)) from 65536 points); $host_memory" \
  "$pairs" "CPU point ops: dtrain against fpsample and SciPy's cKDTree" \
  --extra agreement note -- "$scratch/raw.csv"
echo "report: $results/point_ops_peers_cpu.csv"
