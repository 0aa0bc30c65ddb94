#!/usr/bin/env bash
# PointNet++ point ops: dtrain's own timings of every op and backward
# (bench_pointnet2_ops, a table that compares nothing), then dtrain beside
# the pure-PyTorch versions users write without a kernel package, in one
# process, one call each per round (benchmarks/peers/pointnet2_ops_torch.py;
# the report of Note [Benchmark verdicts] in benchmarks/report/stats.py).
# The strongest CPU peers of the index ops (fpsample, SciPy's cKDTree) are
# run_point_ops_peers.sh's.
# Output, for --device cpu (the default): benchmarks/results/pointnet2_ops_cpu.csv,
# pointnet2_ops_vs_torch_cpu.csv (+ _rounds.csv, .png); for --device cuda the
# gpu_* names the GPU checks use (gpu_pointnet2_ops.csv, gpu_pointnet2_ops_vs_torch.csv).
#
#   bash benchmarks/run_pointnet2_ops.sh [--device cpu|cuda] [--rounds 5] [--sizes 1024,4096]
#                                        [--quick]
#
# About a minute on 2 cores. --quick (a smoke run, about 10 s: N=256 only,
# one round) writes into $DTRAIN_BUILD_DIR/bench-quick unless
# DTRAIN_RESULTS_DIR says where (CTest's bench.pointnet2_ops runs it);
# DTRAIN_RESULTS_DIR=DIR writes elsewhere than benchmarks/results.
#
# Environment: DTRAIN_BUILD_DIR (default build) holds bench_pointnet2_ops and
# kernels/libdtrain_kernels.so; DTRAIN_PYTHON, else $DTRAIN_HOME/venv/bin/python
# (DTRAIN_HOME default ~/.cache/dtrain), is the python with the same torch wheel.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_pointnet2_ops

device=cpu sizes=1024,4096 rounds=5
while (($#)); do
  case "$1" in
    --device) device="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --quick) quick_results; sizes=256 rounds=1; shift ;;
    *) echo "$runner: unknown argument '$1' (--device, --rounds, --sizes, --quick)" >&2; exit 2 ;;
  esac
done
case "$device" in
  cpu) own=pointnet2_ops_cpu vs_torch=pointnet2_ops_vs_torch_cpu ;;
  cuda) own=gpu_pointnet2_ops vs_torch=gpu_pointnet2_ops_vs_torch ;;
  *) echo "$runner: --device must be cpu or cuda, not '$device'" >&2; exit 2 ;;
esac
library="$build/kernels/libdtrain_kernels.so"
[[ -f "$library" ]] || { echo "$runner: $library is not built (ninja -C $build dtrain_kernels)" >&2; exit 1; }
require_python
threads="$("$python" -c 'import torch; print(torch.get_num_threads())')"

echo "== dtrain (bench_pointnet2_ops), $(uptime | sed 's/.*load/load/')"
"$bench" --device "$device" --sizes "$sizes" --repeats "$rounds" --out "$scratch/own.csv"
"$python" "$root/benchmarks/report/stats.py" stamp --settings \
  "B=8; npoint N/4; radius 0.2, nsample 32, k 16, 32 channels; median of $rounds calls after one; $threads intra-op threads; $host_memory" \
  "$scratch/own.csv" "$results/$own.csv"
echo "== dtrain beside pure PyTorch (pointnet2_ops_torch.py), $(uptime | sed 's/.*load/load/')"
"$python" "$root/benchmarks/peers/pointnet2_ops_torch.py" --library "$library" --device "$device" \
  --sizes "$sizes" --rounds "$rounds" --out "$scratch/vs_torch.csv"
report "$vs_torch" plain \
  "one process, $threads intra-op threads for both; B=8, npoint N/4, radius 0.2, nsample 32, k 16, 32 channels; one call each per round after one untimed, order alternating; $rounds rounds; $host_memory" \
  "dtrain:torch" "PointNet++ ops on $device: dtrain against pure PyTorch (the pointnet2_utils.py style)" \
  --extra agreement -- "$scratch/vs_torch.csv"
echo "wrote $results/$own.csv and $results/$vs_torch.csv"
