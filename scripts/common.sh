# Shared settings for dtrain's scripts. Sourced, never run.
#
# Everything that lives outside the repository (the LibTorch virtual
# environment, ccache) sits under DTRAIN_HOME so that a fresh clone in
# another folder -- as CI makes -- reuses it.

# The pinned LibTorch: the PyPI torch wheel. 2.11.0 is built for CUDA 13.0,
# the toolkit these machines carry (see docs/libtorch.md).
DTRAIN_TORCH_VERSION="${DTRAIN_TORCH_VERSION:-2.11.0}"
# The venv's other Python packages (scripts/bootstrap.sh): scikit-learn for
# the tests of the apps' metrics, matplotlib for the apps' pictures.
DTRAIN_SKLEARN_VERSION="${DTRAIN_SKLEARN_VERSION:-1.9.1}"
DTRAIN_MATPLOTLIB_VERSION="${DTRAIN_MATPLOTLIB_VERSION:-3.11.2}"
# lizard measures functions for the lint of sizes (scripts/check_source_sizes.py).
DTRAIN_LIZARD_VERSION="${DTRAIN_LIZARD_VERSION:-1.24.3}"
# tensorboard's own event-file reader checks what --tensorboard writes.
DTRAIN_TENSORBOARD_VERSION="${DTRAIN_TENSORBOARD_VERSION:-2.21.0}"
DTRAIN_HOME="${DTRAIN_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/dtrain}"
DTRAIN_VENV="${DTRAIN_VENV:-$DTRAIN_HOME/venv}"
DTRAIN_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DTRAIN_BUILD_DIR="${DTRAIN_BUILD_DIR:-$DTRAIN_REPO/build}"
export CCACHE_DIR="${CCACHE_DIR:-$DTRAIN_HOME/ccache}"

# The CUDA 13.0 toolkit that bootstrap.sh assembles from NVIDIA's PyPI
# wheels where the machine has none (the torch wheel's CMake config needs
# nvcc even to build CPU-only): its versions, and where it is put together.
DTRAIN_CUDA_WHEEL_VERSION="${DTRAIN_CUDA_WHEEL_VERSION:-13.0.88}"
DTRAIN_CCCL_WHEEL_VERSION="${DTRAIN_CCCL_WHEEL_VERSION:-13.0.85}"
DTRAIN_WHEEL_CUDA_HOME="${DTRAIN_WHEEL_CUDA_HOME:-$DTRAIN_HOME/cuda-13.0}"

if [ -d /usr/local/cuda/bin ] && ! command -v nvcc >/dev/null 2>&1; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
# Without a system toolkit, the assembled one (nvcc on PATH is how LibTorch's
# CMake config and dtrain's find it).
if [ -x "$DTRAIN_WHEEL_CUDA_HOME/bin/nvcc" ] && ! nvcc --version >/dev/null 2>&1; then
  export PATH="$DTRAIN_WHEEL_CUDA_HOME/bin:$PATH"
  export CUDA_HOME="$DTRAIN_WHEEL_CUDA_HOME"
fi

dtrain_log() { printf '[dtrain] %s\n' "$*" >&2; }
dtrain_die() {
  printf '[dtrain] error: %s\n' "$*" >&2
  exit 1
}

# The commit and machine a results CSV names, as benchmarks/report/stats.py
# writes them (run_all.sh fixes both before its first result changes the
# tree): sets bench_commit and bench_machine.
dtrain_bench_provenance() {
  bench_commit="${DTRAIN_BENCH_COMMIT:-$(git -C "$DTRAIN_REPO" rev-parse HEAD)$(git -C "$DTRAIN_REPO" \
    diff --quiet HEAD -- . ':(exclude)benchmarks/results' || echo -dirty)}"
  bench_machine="${DTRAIN_BENCH_MACHINE:-$(lscpu | sed -n 's/^Model name: *//p' | head -n 1 |
    tr ',' ' ') x $(nproc)}"
}

# A runner's --seeds FIRST-LAST: sets first_seed and last_seed, or stops.
dtrain_seed_range() {
  [[ $1 =~ ^([0-9]+)-([0-9]+)$ ]] || dtrain_die "--seeds must be FIRST-LAST, got '$1'"
  first_seed="${BASH_REMATCH[1]}" last_seed="${BASH_REMATCH[2]}"
}

# The main job's runs over seeds (benchmarks/run_main_job_seeds.sh,
# run_recipes.sh) share these. dtrain_main_job_runs OUT: builds
# train_pointnet2 and dtrun, fixes the provenance (dtrain_bench_provenance),
# makes the scratch folder $work (removed at exit) and OUT's folder.
dtrain_main_job_runs() {
  dtrain_build train_pointnet2 dtrun
  dtrain_bench_provenance
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$(dirname "$1")"
}

# dtrain_main_job CSV COLUMN,... FLAG...: train_pointnet2 with FLAGs and
# --csv CSV on 2 processes under dtrun (its output shown only if it fails,
# which stops the script); prints the COLUMNs of the CSV's last row,
# comma-separated.
dtrain_main_job() {
  local csv="$1" columns="$2"
  shift 2
  rm -f "$csv"
  "$DTRAIN_BUILD_DIR/apps/dtrun/dtrun" --standalone --nproc-per-node 2 \
    "$DTRAIN_BUILD_DIR/apps/train_pointnet2/train_pointnet2" "$@" --csv "$csv" >"$work/log" 2>&1 ||
    { cat "$work/log" >&2; exit 1; }
  "$DTRAIN_VENV/bin/python" -c 'import csv, sys
row = list(csv.DictReader(open(sys.argv[1])))[-1]
print(",".join(row[c] for c in sys.argv[2].split(",")))' "$csv" "$columns"
}

# Configures (once) and builds the given targets (default: everything).
dtrain_build() {
  local jobs
  jobs="${DTRAIN_JOBS:-$(nproc)}"
  local torch_prefix
  torch_prefix="$("$DTRAIN_VENV/bin/python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')" ||
    dtrain_die "cannot import torch from $DTRAIN_VENV; run scripts/bootstrap.sh"
  if [ ! -f "$DTRAIN_BUILD_DIR/build.ninja" ]; then
    dtrain_log "configuring $DTRAIN_BUILD_DIR"
    cmake -S "$DTRAIN_REPO" -B "$DTRAIN_BUILD_DIR" -G Ninja \
      -DCMAKE_BUILD_TYPE="${DTRAIN_BUILD_TYPE:-RelWithDebInfo}" \
      -DCMAKE_PREFIX_PATH="$torch_prefix" \
      -DDTRAIN_PYTHON="$DTRAIN_VENV/bin/python" \
      ${DTRAIN_CMAKE_ARGS:-} || dtrain_die "cmake configure failed"
  fi
  local targets=()
  local target
  for target in "$@"; do targets+=(--target "$target"); done
  dtrain_log "building ${*:-everything} with $jobs jobs"
  cmake --build "$DTRAIN_BUILD_DIR" -j "$jobs" "${targets[@]}" || dtrain_die "build failed"
}
