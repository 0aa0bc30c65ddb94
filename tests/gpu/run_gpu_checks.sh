#!/usr/bin/env bash
# Builds dtrain's GPU tests, apps and GPU benchmarks on a machine with a GPU
# whose image has PyTorch, nvcc, CMake, ninja and g++ but not dtrain's Debian
# dependencies (those travel in .gpu-deps/, see prepare_gpu_deps.sh), runs
# them, and writes logs, CSVs and a summary -- all inside a time budget, so
# that one call of a few minutes always ends with a report, even when a step
# hangs or fails. tests/gpu/README.md says how and where it is run.
#
#   python3 tests/gpu/source_stamp.py write   # here, before the tree travels
#   bash tests/gpu/run_gpu_checks.sh [OUTPUT_DIR]   # there
#
# OUTPUT_DIR: default $OUT, else build-gpu/results. At most 8 files land
# there (gpu_summary.txt, three logs, four CSVs).
#
# In order of what the run must show first: NCCL with several ranks on the
# one GPU (the conformance suite at worlds 2-4, a timeout naming the missing
# rank, DDP against one process at worlds 2 and 3), the main job under dtrun
# on CUDA in each precision, whether its step syncs the host, NCCL's
# all-reduce beside torch.distributed's, every other GPU test, the FPS
# goal, the PointNet++ training step beside PyTorch, and Gloo on the image.
#
# Environment (all optional):
#   DTRAIN_GPU_PYTHON      python with the torch wheel (default: python3)
#   DTRAIN_GPU_DEPS        carried dependencies (default: .gpu-deps in the repo)
#   DTRAIN_GPU_BUILD_DIR   build folder, reused by a later run (default: build-gpu)
#   DTRAIN_GPU_JOBS        compile jobs (default: nproc)
#   DTRAIN_GPU_TEST_JOBS   one-rank tests run at once on the GPU (default: 4)
#   DTRAIN_GPU_BUDGET_S    seconds for the whole run (default: 470)
#   DTRAIN_GPU_RESERVE_S   seconds kept for tests and benchmarks after the
#                          build (default: 250)
#   DTRAIN_GPU_MAIN_EPOCHS epochs of each main-job run (default: 5, as
#                          scripts/run.sh)
#   DTRAIN_GPU_CMAKE_ARGS  extra arguments for dtrain's configure
#   DTRAIN_GPU_FOCUS       build and run only some parts, a comma list, for
#                          quick rounds: "nccl" (the multi-rank NCCL tests),
#                          "main" (the main job on CUDA), "kernels" (the
#                          kernels' GPU tests, their Python tests on CUDA,
#                          bench_pointnet2_ops), "gloo" (the Gloo GPU tests,
#                          gloo_smoke); default "all"
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
py="${DTRAIN_GPU_PYTHON:-python3}"
deps="${DTRAIN_GPU_DEPS:-$repo/.gpu-deps}"
build="${DTRAIN_GPU_BUILD_DIR:-$repo/build-gpu}"
jobs="${DTRAIN_GPU_JOBS:-$(nproc)}"
test_jobs="${DTRAIN_GPU_TEST_JOBS:-4}"
budget="${DTRAIN_GPU_BUDGET_S:-470}"
main_epochs="${DTRAIN_GPU_MAIN_EPOCHS:-5}"
focus="${DTRAIN_GPU_FOCUS:-all}"
for part in ${focus//,/ }; do
  [[ $part =~ ^(all|nccl|main|kernels|gloo)$ ]] || {
    echo "DTRAIN_GPU_FOCUS must be all, or a comma list of nccl, main, kernels and gloo, got '$focus'" >&2
    exit 1
  }
done
# in_focus PART: whether the run includes PART (nccl, main, kernels or gloo).
in_focus() { [[ ,$focus, == *,all,* || ,$focus, == *,$1,* ]]; }
out="${1:-${OUT:-$build/results}}"
mkdir -p "$out" "$build"
export PYTHONUNBUFFERED=1 # a Python step stopped by its timeout still leaves its output
out="$(cd "$out" && pwd)"
deps="$(cd "$deps" 2>/dev/null && pwd || echo "$deps")"

build_log="$out/gpu_build.log"
tests_log="$out/gpu_tests.log"
bench_log="$out/gpu_bench.log"
steps="$build/steps.tsv" # step, status, seconds, note: read by summarize.py
: >"$build_log" && : >"$tests_log" && : >"$bench_log" && : >"$steps"
rm -f "$build"/pointnet2_step_*.csv "$build"/main_job_*.csv # an earlier run's rows are not this run's

t0=$SECONDS
left() { echo $((budget - (SECONDS - t0))); }
say() { printf '[gpu-checks %3ds] %s\n' $((SECONDS - t0)) "$*"; }

# step NAME CAP_S LOG CMD...: runs CMD under a timeout of CAP_S seconds (or
# what is left of the budget, less a reserve for the summary), appending its
# output to LOG; records the outcome; on failure shows the log's tail.
step() {
  local name="$1" cap="$2" log="$3"
  shift 3
  if ! focused "$name"; then
    say "$name: skipped (DTRAIN_GPU_FOCUS=$focus)"
    printf '%s\tskipped\t0\tDTRAIN_GPU_FOCUS=%s\n' "$name" "$focus" >>"$steps"
    return 0
  fi
  local limit=$(($(left) - 15))
  ((cap < limit)) && limit=$cap
  if ((limit < 5)); then
    say "$name: skipped, no time left"
    printf '%s\tskipped\t0\tno time left in the %ss budget\n' "$name" "$budget" >>"$steps"
    return 124
  fi
  # A function of this script runs in a child bash (timeout runs programs);
  # it sees the variables and functions exported below.
  declare -F "$1" >/dev/null && set -- bash -c "$(printf '%q ' "$@")"
  say "$name (at most ${limit}s)"
  printf '\n===== %s: %s\n' "$name" "$*" >>"$log"
  local start=$SECONDS rc
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  rc=$?
  local took=$((SECONDS - start)) status=ok note=""
  if ((rc == 124 || rc == 137)); then
    status=timeout note="stopped after ${limit}s"
  elif ((rc != 0)); then
    status=failed note="exit $rc"
  fi
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$took" "$note" >>"$steps"
  say "$name: $status in ${took}s${note:+ ($note)}"
  if [[ $status != ok ]]; then
    tail -n 40 "$log" | sed 's/^/    | /'
  fi
  return $rc
}

# Whether DTRAIN_GPU_FOCUS keeps step NAME.
focused() {
  in_focus all && return 0
  case "$1" in
    googletest | configure | build | tests) return 0 ;;
    nccl_ranks | nccl_allreduce_vs_torch) in_focus nccl ;;
    main_job_cuda | main_job_cuda_sync_free | pointnet2_step_vs_torch) in_focus main ;;
    bench_pointnet2_ops | python_torch_ops_cuda) in_focus kernels ;;
    gloo_smoke) in_focus gloo ;;
    *) return 1 ;;
  esac
}

skip() { # skip NAME REASON
  local reason="$2"
  focused "$1" || reason="DTRAIN_GPU_FOCUS=$focus"
  say "$1: skipped ($reason)"
  printf '%s\tskipped\t0\t%s\n' "$1" "$reason" >>"$steps"
}

# gpu_step NAME CAP_S LOG FILE... -- CMD...: a step that needs a GPU and
# the built FILEs: skipped, naming why, without either.
gpu_step() {
  local name="$1" cap="$2" log="$3" missing=""
  shift 3
  while (($#)) && [[ $1 != -- ]]; do
    [[ -n $missing || -e $1 ]] || missing="$(basename "$1")"
    shift
  done
  shift # the --
  if ((!gpu)); then
    skip "$name" "no CUDA device"
  elif [[ -n $missing ]]; then
    skip "$name" "$missing not built"
  else
    step "$name" "$cap" "$log" "$@"
  fi
}

# Prints the report; its status is the run's: 0 all well, 3 a step failed.
# The logs name files relative to the repository and the output folder:
# they are recorded in benchmarks/results/, and the machine's paths mean
# nothing there.
summarize() {
  sed -i -e "s|$repo/||g" -e "s|$out/||g" "$out"/*.log 2>/dev/null
  "$py" "$repo/tests/gpu/summarize.py" --steps "$steps" --out "$out" --build "$build"
  local rc=$?
  if ((rc != 0 && rc != 3)); then
    echo "summarize.py failed; the steps were:"
    cat "$steps"
  fi
  return $rc
}

fail_early() {
  say "error: $*"
  printf 'setup\tfailed\t0\t%s\n' "$*" >>"$steps"
  summarize
  exit 1
}

# ---- the machine ------------------------------------------------------------
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)   host: $(uname -srm)   cores: $(nproc)"
  # From the stamp written before the tree travelled (a .git beside a copied
  # tree may be older than the tree): "commit: <40 hex digits>[ dirty <hash>]".
  "$py" "$repo/tests/gpu/source_stamp.py" check
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  else
    echo "nvidia-smi: none"
  fi
  echo "nvcc: $(command -v nvcc || echo none)"
  nvcc --version 2>&1 | tail -n 2
  cmake --version 2>&1 | head -n 1
  ninja --version 2>&1 | sed 's/^/ninja /'
  c++ --version 2>&1 | head -n 1
  ldd --version 2>&1 | head -n 1
  "$py" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
    "cuda", torch.version.cuda, "devices", torch.cuda.device_count())' 2>&1
} | tee -a "$build_log" | sed 's/^/    /'

[[ -f "$deps/lib/cmake/fmt/fmt-config.cmake" ]] ||
  fail_early "no carried dependencies in $deps: run tests/gpu/prepare_gpu_deps.sh first (and carry .gpu-deps)"
torch_prefix="$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>>"$build_log")" ||
  fail_early "$py cannot import torch (set DTRAIN_GPU_PYTHON)"
gpu="$("$py" -c 'import torch; print(int(torch.cuda.is_available()))' 2>/dev/null || echo 0)"

nvcc_bin="$(command -v nvcc || true)"
[[ -n "$nvcc_bin" ]] || nvcc_bin=/usr/local/cuda/bin/nvcc
[[ -x "$nvcc_bin" ]] || fail_early "no nvcc on PATH or in /usr/local/cuda/bin"
# LibTorch's CMake config finds the toolkit through the nvcc on PATH.
PATH="$(dirname "$nvcc_bin"):$PATH"

# NCCL: the wheel's own (nvidia-nccl-cu13), which libtorch_cuda.so loads
# anyway (docs/libtorch.md, "One libnccl.so.2 per process"); else CMake finds
# the toolkit's, as on developer machines.
nccl_root="$("$py" - <<'EOF' 2>/dev/null
import importlib.util, os
spec = importlib.util.find_spec("nvidia.nccl")
for d in (spec.submodule_search_locations or []) if spec else []:
    if os.path.exists(os.path.join(d, "include", "nccl.h")):
        print(d)
        break
EOF
)"
nccl_include="" nccl_library=""
if [[ -n "$nccl_root" && -f "$nccl_root/lib/libnccl.so.2" ]]; then
  nccl_include="$nccl_root/include" nccl_library="$nccl_root/lib/libnccl.so.2"
fi

# zlib: the image's libz.so.1 (there may be no libz.so to find), else the carried one.
zlib="$(ldconfig -p 2>/dev/null | awk '$1 == "libz.so.1" && /x86-64/ { print $NF; exit }')"
[[ -n "$zlib" ]] || zlib="$deps/lib/zlib/libz.so.1"

# Libraries libgloo.so.0 needs that the image lacks, and only those (Gloo's
# CMake config names libgloo, though nothing links it now): the image's own
# copies (ibverbs for NCCL, say) stay first where they exist.
runtime_libs="$build/carried-runtime-libs"
rm -rf "$runtime_libs" && mkdir -p "$runtime_libs"
for lib in "$deps"/lib/gloo-runtime/*; do
  name="$(basename "$lib")"
  ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n && /x86-64/ { found = 1 } END { exit !found }' ||
    ln -s "$lib" "$runtime_libs/$name"
done
export LD_LIBRARY_PATH="$runtime_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "carried runtime libraries in use: $(ls "$runtime_libs" | tr '\n' ' ')(others: the image's)" >>"$build_log"

export repo py deps build jobs out torch_prefix nvcc_bin zlib nccl_include nccl_library

# ---- GoogleTest, from the carried sources --------------------------------------
export gtest_prefix="$build/_deps/googletest-install"
build_gtest() {
  cmake -S "$deps/src/googletest" -B "$build/_deps/googletest-build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$gtest_prefix" \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DBUILD_GMOCK=ON -DINSTALL_GTEST=ON &&
    cmake --build "$build/_deps/googletest-build" -j "$jobs" --target install
}
export -f build_gtest
if compgen -G "$gtest_prefix/lib*/cmake/GTest/GTestConfig.cmake" >/dev/null; then
  skip googletest "built by an earlier run"
else
  step googletest 120 "$build_log" build_gtest || fail_early "GoogleTest did not build (gpu_build.log)"
fi

# ---- dtrain: configure, then only the GPU targets ----------------------------
configure() {
  cmake -S "$repo" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$deps;$gtest_prefix;$torch_prefix" \
    -DCMAKE_CUDA_COMPILER="$nvcc_bin" \
    -DDTRAIN_CUDA=ON -DDTRAIN_CUDA_ARCHITECTURES=90 \
    -DDTRAIN_MPI=OFF -DDTRAIN_HDF5=OFF -DDTRAIN_USE_CCACHE=OFF \
    -DZLIB_LIBRARY="$zlib" \
    ${nccl_library:+-DDTRAIN_NCCL_INCLUDE_DIR="$nccl_include" -DDTRAIN_NCCL_LIBRARY="$nccl_library"} \
    ${DTRAIN_GPU_CMAKE_ARGS:-}
}
# What configure found, to show that the carried copies are the ones used.
found_paths() {
  grep -E '^((fmt|spdlog|CLI11|Gloo|GTest|Torch)_DIR|ZLIB_(INCLUDE_DIR|LIBRARY)|DTRAIN_NCCL_(INCLUDE_DIR|LIBRARY)|CMAKE_(CXX|CUDA)_COMPILER):' \
    "$build/CMakeCache.txt" | sed 's/:[A-Z]*=/ = /'
}
export -f configure
if [[ -f "$build/build.ninja" ]]; then
  skip configure "configured by an earlier run"
else
  step configure 180 "$build_log" configure || fail_early "configure failed (gpu_build.log)"
fi
found_paths | tee -a "$build_log" | sed 's/^/    /'

# The multi-rank NCCL tests fork their ranks, each its own NCCL host on
# the one GPU (dtrain/dist/shared_gpu.h); they run one at a time, after the
# build, before anything else on the GPU.
nccl_ranks_tests='NcclConformance|NcclRanks|NcclWorlds'
gpu_targets=(dtrain_nccl_ranks_gpu_tests dtrain_ddp_nccl_gpu_tests dtrun train_pointnet2
  dtrain_gpu_tests dtrain_data_parallel_gpu_tests dtrain_train_apps_gpu_tests
  bench_pointnet2_ops bench_allreduce bench_pointnet2_train)
test_filter=()
if ! in_focus all; then
  gpu_targets=()
  tests_of=()
  in_focus nccl && gpu_targets+=(dtrain_nccl_ranks_gpu_tests dtrain_ddp_nccl_gpu_tests dtrun
    bench_allreduce)
  in_focus main && gpu_targets+=(dtrun train_pointnet2 bench_pointnet2_train)
  in_focus kernels && gpu_targets+=(dtrain_gpu_tests bench_pointnet2_ops) &&
    tests_of+=('PointNet2|CountCorrect|Fps|EventWait')
  in_focus gloo && gpu_targets+=(dtrain_gpu_tests bench_allreduce) && tests_of+=('GlooCuda')
  joined="${tests_of[*]}"
  test_filter=(-R "${joined// /|}")
  ((${#tests_of[@]})) || test_filter=(-R '^$')
fi
# The tests and benchmarks need some 250 s after the build. A build cut
# short is carried on by the next run (the build folder stays).
build_cap=$(($(left) - ${DTRAIN_GPU_RESERVE_S:-250}))
((build_cap < 60)) && build_cap=60
step build "$build_cap" "$build_log" cmake --build "$build" -j "$jobs" --target "${gpu_targets[@]}"

bin="$build/benchmarks"
if ((!gpu)); then
  # No GPU (a rehearsal on a developer machine): the same commands, on the
  # CPU at the smallest sizes, to check the flow; their numbers mean nothing.
  say "no CUDA device visible: the GPU tests skip, the rest runs on the CPU at smoke sizes"
fi

# ---- NCCL with several ranks on one GPU -----------------------------------------
# Each test prints the summary's lines ("nccl_conformance world=3: passed",
# "ddp_equivalence nccl world=2 <case>: max_abs_diff=...") into the log.
step nccl_ranks 200 "$tests_log" ctest --test-dir "$build" -L gpu -R "$nccl_ranks_tests" -j 1 \
  --output-on-failure --no-tests=error --timeout 600

# ---- the main job on CUDA, as users run it -----------------------------------------
# scripts/run.sh's job under dtrun, two processes sharing the one GPU over
# NCCL, in each precision; each run's per-epoch CSV goes to the build folder
# and the summary merges them (gpu_main_job_cuda.csv).
main_job_cuda() {
  local precision amp device=cuda
  ((gpu)) || device=cpu
  for precision in fp32 bf16 fp16; do
    amp="$precision"
    [[ $precision == fp32 ]] && amp=off
    if [[ $device == cpu && $precision == fp16 ]]; then
      echo "fp16: needs a GPU"
      continue
    fi
    echo "--- main job, $precision"
    "$build/apps/dtrun/dtrun" --standalone --nproc-per-node 2 --share-gpu \
      "$build/apps/train_pointnet2/train_pointnet2" --device "$device" --amp "$amp" \
      --model ssg-lite --num-points 512 --epochs "$main_epochs" --lr-schedule cosine \
      --csv "$build/main_job_$precision.csv" || return 1
  done
}
export gpu main_epochs
export -f main_job_cuda
if [[ -x "$build/apps/train_pointnet2/train_pointnet2" && -x "$build/apps/dtrun/dtrun" ]]; then
  ((gpu)) || main_epochs=1
  step main_job_cuda 120 "$bench_log" main_job_cuda
else
  skip main_job_cuda "train_pointnet2 or dtrun not built"
fi

# Whether the main job's step keeps the GPU busy: one epoch in fp32 with each
# step under CUDA's sync debug mode set to error (Note [A step without host
# syncs], sdk/src/train/step_sync_debug.h). A sync inside a step fails the
# run, its error naming the step's phase; the summary reads it.
main_job_cuda_sync_free() {
  DTRAIN_CUDA_SYNC_DEBUG=error "$build/apps/dtrun/dtrun" --standalone --nproc-per-node 2 \
    --share-gpu "$build/apps/train_pointnet2/train_pointnet2" --device cuda --amp off \
    --model ssg-lite --num-points 512 --epochs 1 --lr-schedule cosine \
    --csv "$build/main_job_sync_free.csv"
}
export -f main_job_cuda_sync_free
gpu_step main_job_cuda_sync_free 60 "$bench_log" "$build/apps/train_pointnet2/train_pointnet2" \
  "$build/apps/dtrun/dtrun" -- main_job_cuda_sync_free

# dtrain's NCCL all-reduce at world 2 on the shared GPU against
# torch.distributed's, launched the same way (each rank its own NCCL host);
# rows to the build folder, ratios in the summary.
nccl_allreduce_vs_torch() {
  local sizes=4096,1048576,67108864 port
  rm -f "$build"/allreduce_nccl_*.csv
  "$build/apps/dtrun/dtrun" --standalone --nproc-per-node 2 --share-gpu "$bin/bench_allreduce" \
    --backend nccl --sizes "$sizes" --csv "$build/allreduce_nccl_dtrain.csv" || return 1
  port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "$py" "$repo/benchmarks/peers/allreduce_torch.py" --backend nccl --world-size 2 --port "$port" \
    --sizes "$sizes" --csv "$build/allreduce_nccl_torch.csv"
}
export -f nccl_allreduce_vs_torch
gpu_step nccl_allreduce_vs_torch 60 "$bench_log" "$bin/bench_allreduce" "$build/apps/dtrun/dtrun" \
  -- nccl_allreduce_vs_torch

# ---- every other GPU test ------------------------------------------------------------
tests_cap=$(($(left) - 100))
((tests_cap < 60)) && tests_cap=60
((tests_cap > 150)) && tests_cap=150
step tests "$tests_cap" "$tests_log" ctest --test-dir "$build" -L gpu -E "$nccl_ranks_tests" \
  "${test_filter[@]}" -j "$test_jobs" --output-on-failure --no-tests=ignore --timeout 120

# The ops from Python on CUDA tensors (torch.ops.dtrain.*, the image's
# torch), against the CPU: the class of tests/python/test_torch_ops.py
# that needs a GPU. Its lines go to the tests' log.
gpu_step python_torch_ops_cuda 60 "$tests_log" "$build/kernels/libdtrain_kernels.so" -- \
  "$py" "$repo/tests/python/test_torch_ops.py" "$build/kernels/libdtrain_kernels.so" TorchOpsCuda

# ---- benchmarks ------------------------------------------------------------------------
# The kernels' figures, the CUDA FPS goal's row (B=32, N=8192 -> 1024) among them.
if ((gpu)); then
  device=cuda sizes=1024,4096,16384 repeats=10
else
  device=cpu sizes=1024 repeats=1
fi
if [[ -x "$bin/bench_pointnet2_ops" ]]; then
  step bench_pointnet2_ops 60 "$bench_log" "$bin/bench_pointnet2_ops" --device "$device" \
    --sizes "$sizes" --repeats "$repeats" --out "$out/gpu_pointnet2_ops.csv"
else
  skip bench_pointnet2_ops "not built"
fi

# The PointNet++ classifier's training step, dtrain's C++ model beside the
# same model in Python PyTorch, in each precision the two programs take
# (rows to the build folder; the summary merges them into
# gpu_pointnet2_step.csv and takes the ratios).
pointnet2_step() {
  local precision flags=(--preset ssg --batch-size 32 --points 1024 --warmup 3 --steps 10)
  ((gpu)) || flags=(--preset ssg-lite --batch-size 4 --points 256 --warmup 1 --steps 2)
  for precision in off bf16 fp16; do
    [[ $device == cpu && $precision == fp16 ]] && continue
    "$bin/bench_pointnet2_train" --device "$device" --amp "$precision" "${flags[@]}" \
      --csv "$build/pointnet2_step_dtrain.csv" || return 1
    "$py" "$repo/benchmarks/peers/pointnet2_train_torch.py" --device "$device" --amp "$precision" \
      --library "$build/kernels/libdtrain_kernels.so" "${flags[@]}" \
      --out "$build/pointnet2_step_torch.csv" || return 1
  done
}
export device bin
export -f pointnet2_step
if [[ -x "$bin/bench_pointnet2_train" ]]; then
  step pointnet2_step_vs_torch 90 "$bench_log" pointnet2_step
else
  skip pointnet2_step_vs_torch "bench_pointnet2_train not built"
fi

# Last and short: the Gloo backend (LibTorch's own Gloo, Note [One Gloo in
# the process]) all-reduces on this image, where Debian's libgloo in a
# module of its own crashed before (two CPU ranks over loopback; no CSV).
if [[ -x "$bin/bench_allreduce" ]]; then
  port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  step gloo_smoke 30 "$bench_log" "$bin/bench_allreduce" --backend gloo --world-size 2 \
    --port "$port" --sizes 4096,1048576 --repeats 3 --big-repeats 3
else
  skip gloo_smoke "bench_allreduce not built"
fi

summarize
exit $?
