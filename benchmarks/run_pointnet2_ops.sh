#!/usr/bin/env bash
# PointNet++ point ops: dtrain's own timings of every op and backward
# (bench_pointnet2_ops), then dtrain beside the pure-PyTorch versions in one
# process (benchmarks/peers/pointnet2_ops_torch.py), then the plot of the
# speedups (benchmarks/report/pointnet2_report.py) when matplotlib is
# importable by the venv's python.
# Output, for --device cpu (the default): benchmarks/results/pointnet2_ops_cpu.csv,
# pointnet2_ops_vs_torch_cpu.csv (+ .png); for --device cuda the gpu_* names
# the GPU checks write (gpu_pointnet2_ops.csv, gpu_pointnet2_ops_vs_torch.csv).
#
#   bash benchmarks/run_pointnet2_ops.sh [--device cpu|cuda] [--repeats 3] [--sizes 1024,4096,16384]
#                                        [--quick]
#
# DTRAIN_RESULTS_DIR=DIR writes the CSV and plot there instead of
# benchmarks/results (for a trial run that must not replace the committed ones).
# --quick (a smoke run, about 7 s: N=256 only, one repeat, unless --sizes or
# --repeats say otherwise) writes into $DTRAIN_BUILD_DIR/bench-quick unless
# DTRAIN_RESULTS_DIR says where (CTest's bench.pointnet2_ops runs it).
#
# Environment: DTRAIN_BUILD_DIR (default build) holds bench_pointnet2_ops and
# kernels/libdtrain_kernels.so; DTRAIN_PYTHON, else $DTRAIN_HOME/venv/bin/python
# (DTRAIN_HOME default ~/.cache/dtrain), is the python with the same torch wheel.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_pointnet2_ops

device=cpu
args=()
quick=0
while (($#)); do
  case "$1" in
    --device) device="$2"; shift 2 ;;
    --repeats | --sizes) args+=("$1" "$2"); shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "$runner: unknown argument '$1' (--device, --repeats, --sizes, --quick)" >&2; exit 2 ;;
  esac
done
if [[ $quick == 1 ]]; then
  quick_results
  # First, so that the caller's --sizes or --repeats (later) win in both programs.
  args=(--sizes 256 --repeats 1 ${args[@]+"${args[@]}"})
fi
case "$device" in
  cpu) own="$results/pointnet2_ops_cpu.csv" vs_torch="$results/pointnet2_ops_vs_torch_cpu.csv" ;;
  cuda) own="$results/gpu_pointnet2_ops.csv" vs_torch="$results/gpu_pointnet2_ops_vs_torch.csv" ;;
  *) echo "$runner: --device must be cpu or cuda, not '$device'" >&2; exit 2 ;;
esac
library="$build/kernels/libdtrain_kernels.so"
[[ -f "$library" ]] || { echo "$runner: $library is not built (ninja -C $build dtrain_kernels)" >&2; exit 1; }
require_python

echo "== dtrain (bench_pointnet2_ops), $(uptime | sed 's/.*load/load/')"
"$bench" --device "$device" ${args[@]+"${args[@]}"} --out "$scratch/own.csv"
echo "== dtrain beside pure PyTorch (pointnet2_ops_torch.py), $(uptime | sed 's/.*load/load/')"
"$python" "$root/benchmarks/peers/pointnet2_ops_torch.py" --library "$library" --device "$device" \
  ${args[@]+"${args[@]}"} --out "$scratch/vs_torch.csv"
# Both land together, so a run stopped half-way leaves the previous pair.
mv "$scratch/own.csv" "$own"
mv "$scratch/vs_torch.csv" "$vs_torch"
echo "wrote $own and $vs_torch"

if "$python" -c 'import matplotlib' 2>/dev/null; then
  "$python" "$root/benchmarks/report/pointnet2_report.py" --csv "$vs_torch" --png "${vs_torch%.csv}.png"
else
  echo "$runner: matplotlib is not in $python; no plot ($python -m pip install matplotlib)" >&2
fi
