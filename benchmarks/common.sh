# Sourced by the benchmark runners (benchmarks/run_*.sh) with the name of
# the benchmark program they run:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/common.sh" bench_ddp
#
# Sets root (the repository), build (DTRAIN_BUILD_DIR, default build),
# python (DTRAIN_PYTHON, else $DTRAIN_HOME/venv/bin/python with DTRAIN_HOME
# default ~/.cache/dtrain: the same torch wheel the SDK builds on), bench
# (the program, checked to be built), results (benchmarks/results or
# $DTRAIN_RESULTS_DIR, created)
# and scratch (a temporary directory removed on exit); defines port (a free
# port below the ephemeral range), require_python, quick_results, and the
# lockstep_* runner of Note [Lockstep benchmarks] (benchmarks/support/lockstep.h).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTRAIN_BUILD_DIR:-$root/build}"
python="${DTRAIN_PYTHON:-${DTRAIN_HOME:-$HOME/.cache/dtrain}/venv/bin/python}"
bench="$build/benchmarks/$1"
# DTRAIN_RESULTS_DIR sends a run's CSVs and plots elsewhere (a smoke run
# must not overwrite the committed results).
results="${DTRAIN_RESULTS_DIR:-$root/benchmarks/results}"
runner="$(basename "$0")"

[[ -x "$bench" ]] || { echo "$runner: $bench is not built (ninja -C $build $1)" >&2; exit 1; }

# quick_results: for a runner's --quick (a smoke run of its smallest
# configuration, whose numbers mean little): results go to
# $build/bench-quick unless DTRAIN_RESULTS_DIR says where, never over the
# committed ones. The CTest label `bench` runs every --quick this way.
quick_results() {
  if [[ -z "${DTRAIN_RESULTS_DIR:-}" ]]; then
    results="$build/bench-quick"
    mkdir -p "$results"
  fi
}

require_python() {
  [[ -x "$python" ]] || { echo "$runner: no python at $python (set DTRAIN_PYTHON)" >&2; exit 1; }
}

# A random port below the kernel's ephemeral range that can be bound now
# (as the tests' free_port(): a port from the range can go to the next
# outgoing connection before the benchmark's store listens on it).
port() {
  "$python" - <<'PY'
import random, socket
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        high = int(f.read().split()[0])
except OSError:
    high = 32768
low = 10000 if high > 11000 else 1024
for _ in range(200):
    candidate = random.randrange(low, high)
    with socket.socket() as s:
        try:
            s.bind(("", candidate))
        except OSError:
            continue
    print(candidate)
    break
else:
    raise SystemExit(f"no free port in [{low}, {high})")
PY
}

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$results"

# lockstep_setup <dir> <name:world>...: the turn order, one FIFO per
# participant rank held open by this shell, and the first turn given.
lockstep_setup() {
  local dir="$1" participant name world rank fd
  shift
  mkdir -p "$dir"
  : >"$dir/order"
  lockstep_fds=()
  lockstep_pids=()
  for participant in "$@"; do
    name="${participant%:*}"
    world="${participant#*:}"
    echo "$name" >>"$dir/order"
    for ((rank = 0; rank < world; rank++)); do
      mkfifo "$dir/$name.$rank"
      exec {fd}<>"$dir/$name.$rank"
      lockstep_fds+=("$fd")
    done
  done
  name="$(head -n1 "$dir/order")"
  for fifo in "$dir/$name".*; do echo 0 >"$fifo"; done
}

# lockstep_started <pid>: a participant launched in the background.
lockstep_started() { lockstep_pids+=("$1"); }

kill_tree() {
  local child
  for child in $(pgrep -P "$1" || true); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}

# lockstep_wait: waits for every participant; the first failure stops the
# others (they would otherwise wait for a turn until their timeout).
lockstep_wait() {
  local pid status=0 fd left
  # The participants are this shell's only background jobs.
  for ((left = ${#lockstep_pids[@]}; left > 0; left--)); do
    if ! wait -n; then
      status=1
      for pid in "${lockstep_pids[@]}"; do kill_tree "$pid"; done
      break
    fi
  done
  wait || true
  for fd in "${lockstep_fds[@]}"; do exec {fd}>&-; done
  if [[ $status != 0 ]]; then
    echo "$runner: a lockstep participant failed; the others were stopped" >&2
    exit 1
  fi
}
