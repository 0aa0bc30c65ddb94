# Sourced by the benchmark runners (benchmarks/run_*.sh) with the name of
# the benchmark program they run:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_ddp
#
# Sets root (the repository), build (DTRAIN_BUILD_DIR, default build),
# python (DTRAIN_PYTHON, else $DTRAIN_HOME/venv/bin/python with DTRAIN_HOME
# default ~/.cache/dtrain: the same torch wheel the SDK builds on), bench
# (the program, checked to be built), results (benchmarks/results, created)
# and scratch (a temporary directory removed on exit); defines port (a free
# loopback port) and require_python.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTRAIN_BUILD_DIR:-$root/build}"
python="${DTRAIN_PYTHON:-${DTRAIN_HOME:-$HOME/.cache/dtrain}/venv/bin/python}"
bench="$build/benchmarks/$1"
results="$root/benchmarks/results"
runner="$(basename "$0")"

[[ -x "$bench" ]] || { echo "$runner: $bench is not built (ninja -C $build $1)" >&2; exit 1; }

require_python() {
  [[ -x "$python" ]] || { echo "$runner: no python at $python (set DTRAIN_PYTHON)" >&2; exit 1; }
}

port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$results"
