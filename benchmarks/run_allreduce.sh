#!/usr/bin/env bash
# All-reduce on Gloo, 2 ranks over loopback: dtrain's bench_allreduce and
# torch.distributed (benchmarks/peers/allreduce_torch.py) in the same run,
# merged into benchmarks/results/allreduce_gloo.csv (+ .png when matplotlib
# is importable by the venv's python).
#
#   bash benchmarks/run_allreduce.sh [extra flags for both harnesses, e.g. --repeats 3]
#
# Environment: DTRAIN_BUILD_DIR (default build) holds bench_allreduce;
# DTRAIN_PYTHON, else $DTRAIN_HOME/venv/bin/python (DTRAIN_HOME default
# ~/.cache/dtrain), is the python with the same torch wheel.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTRAIN_BUILD_DIR:-$root/build}"
python="${DTRAIN_PYTHON:-${DTRAIN_HOME:-$HOME/.cache/dtrain}/venv/bin/python}"
bench="$build/benchmarks/bench_allreduce"
results="$root/benchmarks/results"

[[ -x "$bench" ]] || { echo "run_allreduce.sh: $bench is not built (ninja -C $build bench_allreduce)" >&2; exit 1; }
[[ -x "$python" ]] || { echo "run_allreduce.sh: no python at $python (set DTRAIN_PYTHON)" >&2; exit 1; }

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$results"

port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

echo "== dtrain (bench_allreduce)"
"$bench" --world-size 2 --port "$(port)" --csv "$scratch/dtrain.csv" "$@"
echo "== torch.distributed (allreduce_torch.py)"
"$python" "$root/benchmarks/peers/allreduce_torch.py" --world-size 2 --port "$(port)" \
  --csv "$scratch/torch.csv" "$@"

png=""
if "$python" -c 'import matplotlib' 2>/dev/null; then
  png="$results/allreduce_gloo.png"
else
  echo "run_allreduce.sh: matplotlib is not in $python; no plot ($python -m pip install matplotlib)" >&2
fi
"$python" "$root/benchmarks/report/allreduce_report.py" --dtrain "$scratch/dtrain.csv" \
  --torch "$scratch/torch.csv" --out "$results/allreduce_gloo.csv" ${png:+--png "$png"}
