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
# port below the ephemeral range), require_python, quick_results,
# require_peers, report (rounds -> comparisons, benchmarks/report/), run_world
# (one process per rank) and the lockstep_* runner of Note [Lockstep
# benchmarks] (benchmarks/support/lockstep.h).
#
# Every process a runner starts, dtrain's and every peer's, runs under one
# host-memory policy, dtrain's (dtrain::util::retain_freed_host_memory: glibc's
# mmap threshold at its 32 MiB maximum, no block mapped on its own, 1 GiB trim
# threshold), set here through glibc's environment so that Python peers get
# it too: a comparison is of the code, not of malloc settings. The runners
# write it, with their thread counts, warm-up and rounds, into every CSV's
# settings column, and commit and machine beside it (Note [Benchmark verdicts]
# in benchmarks/report/stats.py).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DTRAIN_BUILD_DIR:-$root/build}"
python="${DTRAIN_PYTHON:-${DTRAIN_HOME:-$HOME/.cache/dtrain}/venv/bin/python}"
bench="$build/benchmarks/$1"
# DTRAIN_RESULTS_DIR sends a run's CSVs and plots elsewhere (a smoke run
# must not overwrite the committed results).
results="${DTRAIN_RESULTS_DIR:-$root/benchmarks/results}"
runner="$(basename "$0")"

[[ -x "$bench" ]] || { echo "$runner: $bench is not built (ninja -C $build $1)" >&2; exit 1; }

export MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=1073741824
host_memory="host memory retained for every process (glibc mmap threshold 32 MiB, no mmapped blocks, trim threshold 1 GiB)"

# The optional Python packages the peers and plots need, pinned in
# requirements-peers.txt beside this file.
peer_requirements="$root/benchmarks/requirements-peers.txt"

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
  # Commit and machine of this run's CSVs, found once (run_all.sh sets them
  # for all its runners, before its results start to change the tree).
  if [[ -z "${DTRAIN_BENCH_COMMIT:-}" || -z "${DTRAIN_BENCH_MACHINE:-}" ]]; then
    local found
    found="$("$python" "$root/benchmarks/report/stats.py")"
    export DTRAIN_BENCH_COMMIT="${DTRAIN_BENCH_COMMIT:-${found%%$'\n'*}}"
    export DTRAIN_BENCH_MACHINE="${DTRAIN_BENCH_MACHINE:-${found#*$'\n'}}"
  fi
}

# require_peers MODULE...: these modules importable by $python: when one is
# missing, requirements-peers.txt goes into $python's venv with pip, or with
# DTRAIN_BENCH_NO_INSTALL=1 the runner stops with exit status 77 (skipped),
# saying so.
require_peers() {
  require_python
  local missing=() module
  for module in "$@"; do
    "$python" -c "import $module" 2>/dev/null || missing+=("$module")
  done
  ((${#missing[@]} == 0)) && return 0
  if [[ "${DTRAIN_BENCH_NO_INSTALL:-0}" == 1 ]]; then
    echo "$runner: skipped: $python cannot import ${missing[*]} (pip install -r $peer_requirements)" >&2
    exit 77
  fi
  echo "$runner: installing $peer_requirements into $python's environment" >&2
  "$python" -m pip install --quiet -r "$peer_requirements" >&2
}

# report NAME FORMAT SETTINGS PAIRS TITLE [--extra COLUMN...] -- RAW...: the
# raw CSVs as $results/NAME_rounds.csv (benchmarks/report/rounds.py FORMAT)
# and the comparisons as $results/NAME.csv and NAME.png (compare.py PAIRS),
# written together so that a run stopped half-way leaves the previous set.
report() {
  local name="$1" format="$2" settings="$3" pairs="$4" title="$5" extra=()
  shift 5
  while (($#)) && [[ $1 != -- ]]; do extra+=("$1"); shift; done
  shift
  "$python" "$root/benchmarks/report/rounds.py" "$format" --settings "$settings" \
    --out "$scratch/$name.rounds" "$@"
  "$python" "$root/benchmarks/report/compare.py" --rounds "$scratch/$name.rounds" \
    --pairs "$pairs" --out "$scratch/$name.csv" --png "$scratch/$name.png" --title "$title" \
    ${extra[@]+"${extra[@]}"}
  mv "$scratch/$name.rounds" "$results/${name}_rounds.csv"
  mv "$scratch/$name.csv" "$results/$name.csv"
  if [[ -f "$scratch/$name.png" ]]; then mv "$scratch/$name.png" "$results/$name.png"; fi
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

# run_world <world> <command...>: one process per rank, torchrun's variables,
# one OpenMP thread each.
run_world() {
  local world="$1"; shift
  local master_port pids=() rank status=0
  master_port="$(port)"
  for ((rank = 0; rank < world; rank++)); do
    RANK=$rank WORLD_SIZE=$world LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=$master_port \
      OMP_NUM_THREADS=1 "$@" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
  return $status
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
