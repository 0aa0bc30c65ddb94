#!/usr/bin/env bash
# Builds dtrain's GPU tests and GPU benchmarks on a machine with a GPU whose
# image has PyTorch, nvcc, CMake, ninja and g++ but not dtrain's Debian
# dependencies (those travel in .gpu-deps/, see prepare_gpu_deps.sh), runs
# them, and writes logs, CSVs and a summary -- all inside a time budget, so
# that one call of a few minutes always ends with a report, even when a step
# hangs or fails. tests/gpu/README.md says how and where it is run.
#
#   bash tests/gpu/run_gpu_checks.sh [OUTPUT_DIR]
#
# OUTPUT_DIR: default $OUT, else build-gpu/results. At most 8 files land
# there (gpu_summary.txt, three logs, four CSVs).
#
# Environment (all optional):
#   DTRAIN_GPU_PYTHON      python with the torch wheel (default: python3)
#   DTRAIN_GPU_DEPS        carried dependencies (default: .gpu-deps in the repo)
#   DTRAIN_GPU_BUILD_DIR   build folder, reused by a later run (default: build-gpu)
#   DTRAIN_GPU_JOBS        compile jobs (default: nproc)
#   DTRAIN_GPU_TEST_JOBS   tests run at once on the GPU (default: 4)
#   DTRAIN_GPU_BUDGET_S    seconds for the whole run (default: 450)
#   DTRAIN_GPU_RESERVE_S   seconds kept for tests and benchmarks after the
#                          build (default: 150)
#   DTRAIN_GPU_CMAKE_ARGS  extra arguments for dtrain's configure
#   DTRAIN_GPU_FOCUS       build and run only some parts, a comma list, for
#                          quick rounds: "kernels" (the PointNet++ kernels'
#                          GPU tests, their Python tests on CUDA,
#                          bench_pointnet2_ops, profile_fps),
#                          "gloo" (the Gloo GPU tests, gloo_smoke and
#                          gloo_debug); default "all"
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
py="${DTRAIN_GPU_PYTHON:-python3}"
deps="${DTRAIN_GPU_DEPS:-$repo/.gpu-deps}"
build="${DTRAIN_GPU_BUILD_DIR:-$repo/build-gpu}"
jobs="${DTRAIN_GPU_JOBS:-$(nproc)}"
test_jobs="${DTRAIN_GPU_TEST_JOBS:-4}"
budget="${DTRAIN_GPU_BUDGET_S:-450}"
focus="${DTRAIN_GPU_FOCUS:-all}"
for part in ${focus//,/ }; do
  [[ $part == all || $part == kernels || $part == gloo ]] || {
    echo "DTRAIN_GPU_FOCUS must be all, or a comma list of kernels and gloo, got '$focus'" >&2
    exit 1
  }
done
# in_focus PART: whether the run includes PART (kernels or gloo).
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
rm -f "$build/pointnet2_train.csv" # an earlier run's rows are not this run's

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
    bench_pointnet2_ops | profile_fps | python_torch_ops_cuda) in_focus kernels ;;
    gloo_smoke | gloo_debug) in_focus gloo ;;
    *) return 1 ;;
  esac
}

skip() { # skip NAME REASON
  local reason="$2"
  focused "$1" || reason="DTRAIN_GPU_FOCUS=$focus"
  say "$1: skipped ($reason)"
  printf '%s\tskipped\t0\t%s\n' "$1" "$reason" >>"$steps"
}

# Prints the report; its status is the run's: 0 all well, 3 a step failed.
# The logs name files relative to the repository and the output folder:
# they are recorded in benchmarks/results/, and the machine's paths mean
# nothing there.
summarize() {
  sed -i -e "s|$repo/||g" -e "s|$out/||g" "$out"/*.log 2>/dev/null
  "$py" "$repo/tests/gpu/summarize.py" --steps "$steps" --out "$out" \
    --train-csv "$build/pointnet2_train.csv"
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
  # --dirty: a tree copied onto the machine can differ from the .git beside it.
  echo "commit: $(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)"
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

# Libraries libgloo.so.0 needs that the image lacks, and only those: the
# image's own copies (ibverbs for NCCL, say) stay first where they exist.
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

gpu_targets=(dtrain_gpu_tests dtrain_data_parallel_gpu_tests dtrain_train_apps_gpu_tests
  bench_pointnet2_ops bench_allreduce bench_amp_toycnn bench_pointnet2_train)
test_filter=()
if ! in_focus all; then
  gpu_targets=(dtrain_gpu_tests)
  tests_of=()
  in_focus kernels && gpu_targets+=(bench_pointnet2_ops) && tests_of+=('PointNet2|CountCorrect|FpsMeasure|EventWait')
  in_focus gloo && gpu_targets+=(bench_allreduce) && tests_of+=('GlooCuda')
  joined="${tests_of[*]}"
  test_filter=(-R "${joined// /|}")
fi
# The tests and benchmarks need some 150 s after the build (less when the
# benchmarks may be cut short). A build cut short is carried on by the next
# run (the build folder stays).
build_cap=$(($(left) - ${DTRAIN_GPU_RESERVE_S:-150}))
((build_cap < 60)) && build_cap=60
step build "$build_cap" "$build_log" cmake --build "$build" -j "$jobs" --target "${gpu_targets[@]}"

# ---- benchmarks, then tests (label gpu) ----------------------------------------
# The kernels' benchmark first: it is short (some 20 s) and holds the figure
# the kernels issue still waits on (the CUDA FPS goal), which a test step
# cut short by the budget must not cost. Then the tests, which take what
# they need of what is left, then the other benchmarks.
bin="$build/benchmarks"
if ((gpu)); then
  device=cuda sizes=1024,4096,16384,65536 peer_sizes=1024,4096,16384 repeats=10
else
  # No GPU (a rehearsal on a developer machine): the same commands, on the
  # CPU at the smallest size, to check the flow; their numbers mean nothing.
  device=cpu sizes=1024 peer_sizes=1024 repeats=1
  say "no CUDA device visible: benchmarks run on the CPU at smoke sizes"
fi

if [[ -x "$bin/bench_pointnet2_ops" ]]; then
  step bench_pointnet2_ops 90 "$bench_log" "$bin/bench_pointnet2_ops" --device "$device" \
    --sizes "$sizes" --repeats "$repeats" --out "$out/gpu_pointnet2_ops.csv"
else
  skip bench_pointnet2_ops "not built"
fi

# ---- tests (label gpu) -------------------------------------------------------
# Short of time, the tests take what is left before the other benchmarks.
tests_cap=$(($(left) - 90))
((tests_cap < 120)) && tests_cap=120
((tests_cap > 240)) && tests_cap=240
step tests "$tests_cap" "$tests_log" ctest --test-dir "$build" -L gpu "${test_filter[@]}" -j "$test_jobs" \
  --output-on-failure --no-tests=error --timeout 150

# The ops from Python on CUDA tensors (torch.ops.dtrain.*, the image's
# torch), against the CPU: the class of tests/python/test_torch_ops.py
# that needs a GPU. Its lines go to the tests' log.
if ((!gpu)); then
  skip python_torch_ops_cuda "no CUDA device"
elif [[ -f "$build/kernels/libdtrain_kernels.so" ]]; then
  step python_torch_ops_cuda 60 "$tests_log" "$py" "$repo/tests/python/test_torch_ops.py" \
    "$build/kernels/libdtrain_kernels.so" TorchOpsCuda
else
  skip python_torch_ops_cuda "libdtrain_kernels.so not built"
fi

if [[ -f "$build/kernels/libdtrain_kernels.so" ]]; then
  step bench_pointnet2_vs_torch 90 "$bench_log" "$py" "$repo/benchmarks/peers/pointnet2_ops_torch.py" \
    --library "$build/kernels/libdtrain_kernels.so" --device "$device" --sizes "$peer_sizes" \
    --repeats "$((repeats < 5 ? repeats : 5))" --out "$out/gpu_pointnet2_ops_vs_torch.csv"
else
  skip bench_pointnet2_vs_torch "libdtrain_kernels.so not built"
fi

# NCCL on one GPU is a world of one rank: it times the backend's per-call
# cost, not a link (busbw is 0 by definition). Older bench_allreduce keeps
# its buffers on the CPU, which NCCL refuses.
if ((!gpu)); then
  skip bench_allreduce_nccl "no CUDA device"
elif ! grep -q 'is_cuda()' "$repo/benchmarks/dist/bench_allreduce.cpp"; then
  skip bench_allreduce_nccl "this bench_allreduce keeps its buffers on the CPU"
elif [[ ! -x "$bin/bench_allreduce" ]]; then
  skip bench_allreduce_nccl "not built"
else
  port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  step bench_allreduce_nccl 60 "$bench_log" "$bin/bench_allreduce" --backend nccl \
    --world-size 1 --rank 0 --port "$port" --repeats 5 --big-repeats 3 \
    --sizes 4096,65536,1048576,16777216,268435456 --csv "$out/gpu_allreduce_nccl.csv"
fi

# The AMP benchmark, when it can put the model on the GPU (--device): fp32,
# bf16 and (where offered) fp16, dtrain and its torch.autocast peer
# interleaved (one process each, so a cut-short step still leaves pairs),
# rows merged into one CSV.
amp_on_gpu() {
  local csv="$out/gpu_amp_toycnn.csv" precision impl part
  local precisions=(off bf16) flags=(--device cuda --batch-size 256 --warmup 10 --steps 50)
  "$bin/bench_amp_toycnn" --help 2>&1 | grep -q fp16 && precisions+=(fp16)
  rm -f "$csv"
  for precision in "${precisions[@]}"; do
    for impl in dtrain torch; do
      part="$build/amp_${impl}_$precision.csv"
      if [[ $impl == dtrain ]]; then
        "$bin/bench_amp_toycnn" --precision "$precision" "${flags[@]}" --csv "$part" || return 1
      else
        "$py" "$repo/benchmarks/peers/amp_toycnn_torch.py" --precision "$precision" \
          "${flags[@]}" --csv "$part" || return 1
      fi
      # The header once (a redirection of the whole `if` would create the
      # file before its test, and the header would never be written).
      if [[ -s "$csv" ]]; then tail -n +2 "$part" >>"$csv"; else cp "$part" "$csv"; fi
    done
  done
}
export bin
export -f amp_on_gpu
if ((!gpu)); then
  skip bench_amp_toycnn "no CUDA device"
elif [[ ! -x "$bin/bench_amp_toycnn" ]]; then
  skip bench_amp_toycnn "not built"
elif ! "$bin/bench_amp_toycnn" --help 2>&1 | grep -q -- '--device'; then
  skip bench_amp_toycnn "this bench_amp_toycnn has no --device (CPU autocast only)"
else
  step bench_amp_toycnn 60 "$bench_log" amp_on_gpu
fi

# The PointNet++ classifier's training step in both layouts of its set
# abstractions: channels-last (dtrain's default, measured faster on the
# CPU) and contiguous (Python PointNet++'s). Which is faster on the GPU is
# an open question (tests/gpu/README.md). Rows go to the build folder (the
# files that come back are at their limit); the summary prints them.
train_layouts() {
  local layout
  rm -f "$build/pointnet2_train.csv"
  for layout in channels-last contiguous; do
    "$bin/bench_pointnet2_train" --device "$device" --layout "$layout" "$@" \
      --csv "$build/pointnet2_train.csv" || return 1
  done
  # Part segmentation's feature propagations and head on rows of channels
  # (the default) or as channel-major Conv1d stacks, when the benchmark has it.
  "$bin/bench_pointnet2_train" --help 2>&1 | grep -q -- '--propagation-layout' || return 0
  for layout in rows channel-major; do
    "$bin/bench_pointnet2_train" --device "$device" --model partseg --propagation-layout "$layout" \
      "$@" --csv "$build/pointnet2_train.csv" || return 1
  done
}
export device
export -f train_layouts
if [[ ! -x "$bin/bench_pointnet2_train" ]]; then
  skip bench_pointnet2_train "not built"
elif ! "$bin/bench_pointnet2_train" --help 2>&1 | grep -q -- '--layout'; then
  skip bench_pointnet2_train "this bench_pointnet2_train has no --layout"
elif ((gpu)); then
  step bench_pointnet2_train 90 "$bench_log" train_layouts --preset ssg --batch-size 32 \
    --points 1024 --warmup 3 --steps 10
else
  step bench_pointnet2_train 90 "$bench_log" train_layouts --preset ssg-lite --batch-size 4 \
    --points 256 --warmup 1 --steps 2
fi

# Last and short: the carried libgloo loads and all-reduces on this image
# (two CPU ranks over loopback; nothing GPU about it, no CSV).
if [[ -x "$bin/bench_allreduce" ]]; then
  port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  step gloo_smoke 30 "$bench_log" "$bin/bench_allreduce" --backend gloo --world-size 2 \
    --port "$port" --sizes 4096,1048576 --repeats 3 --big-repeats 3
else
  skip gloo_smoke "bench_allreduce not built"
fi

# ---- diagnostics -----------------------------------------------------------------
# Where the FPS kernels' warps stall at the goal size (B = 32, N = 8192 ->
# 1024): Nsight Compute profiles one launch of the leader kernel (1024, then
# 512 threads: DTRAIN_CUDA_FPS_THREADS; then rounds of two picks on 512), of
# the register kernel (each thread's furthest point by a pass, then by a
# tree: DTRAIN_CUDA_FPS_LANE; then the tree with rounds of two and of four
# picks: DTRAIN_CUDA_FPS_ROUND) and of the striped kernel (after two
# warm-ups each), and profile_fps.py prints the details page and the SASS
# instructions with the most stall samples. The leader comes first: it is
# the newest, and the step may run out of time.
profile_fps() {
  local ncu_bin setting kernel lane round threads rest name
  ncu_bin="$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)"
  [[ -n $ncu_bin ]] || { echo "no ncu on this machine"; return 1; }
  for setting in leader:::1024 leader:::512 leader::2:512 registers:pass:1: registers:tree:1: \
    registers:tree:2: registers:tree:4: striped:::; do
    IFS=: read -r kernel lane round threads <<<"$setting"
    name="$kernel$lane$round$threads"
    echo "--- fps_${kernel}_kernel${lane:+ (DTRAIN_CUDA_FPS_LANE=$lane)}${round:+ (DTRAIN_CUDA_FPS_ROUND=$round)}${threads:+ (DTRAIN_CUDA_FPS_THREADS=$threads)}"
    DTRAIN_CUDA_FPS=$kernel DTRAIN_CUDA_FPS_LANE=$lane DTRAIN_CUDA_FPS_ROUND=$round \
      DTRAIN_CUDA_FPS_THREADS=$threads \
      "$ncu_bin" --kernel-name "regex:fps_${kernel}" \
      --launch-skip 2 --launch-count 1 --set full --import-source yes -f \
      -o "$build/fps_$name" \
      "$py" "$repo/tests/gpu/profile_fps.py" --library "$build/kernels/libdtrain_kernels.so" || return 1
    "$py" "$repo/tests/gpu/profile_fps.py" --report "$build/fps_$name.ncu-rep" \
      --ncu "$ncu_bin" || return 1
  done
}
export -f profile_fps
if ((!gpu)); then
  skip profile_fps "no CUDA device"
elif [[ ! -f "$build/kernels/libdtrain_kernels.so" ]]; then
  skip profile_fps "libdtrain_kernels.so not built"
else
  step profile_fps 200 "$bench_log" profile_fps
fi

# Where a Gloo rank crashes on this image, when gloo_smoke did (tests/gpu/
# README.md, "Gloo on the image"): rank 0 under cuda-gdb (which debugs host
# code too; the image has no gdb), then under the dynamic linker's binding
# log: which object each of libgloo's and libdtrain_gloo's references to
# std::call_once's state (__once_call, __once_callable, __once_proxy),
# pthread_once and pthread_mutex_trylock went to. Symbols are read only for
# dtrain's and Gloo's libraries (LibTorch's would take most of the step).
gloo_debug() {
  local gdb_bin peer port log=/tmp/dtrain-gloo-bindings
  gdb_bin="$(command -v cuda-gdb || echo /usr/local/cuda/bin/cuda-gdb)"
  gloo_rank() { # gloo_rank RANK PORT [COMMAND PREFIX...]: one rank of a 2-rank all-reduce
    local rank="$1" port="$2"
    shift 2
    "$@" "$bin/bench_allreduce" --backend gloo --world-size 2 --port "$port" --sizes 4096 \
      --repeats 1 --big-repeats 1 --rank "$rank"
  }
  free_port() {
    "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  }
  port="$(free_port)"
  gloo_rank 1 "$port" exec timeout 40 &  # exec: $! is the rank (under timeout), which kill ends
  peer=$!
  gloo_rank 0 "$port" "$gdb_bin" -batch -iex 'set auto-solib-add off' -ex run \
    -ex 'info sharedlibrary' -ex 'sharedlibrary dtrain' -ex 'sharedlibrary gloo' -ex 'bt 30' \
    -ex 'info registers rip rsp' -ex 'x/2gx $rsp' --args
  kill "$peer" 2>/dev/null
  wait "$peer" 2>/dev/null
  echo "--- bindings of rank 0 (LD_DEBUG=bindings)"
  rm -f "$log".*
  port="$(free_port)"
  gloo_rank 1 "$port" exec timeout 40 &
  peer=$!
  LD_DEBUG=bindings LD_DEBUG_OUTPUT="$log" gloo_rank 0 "$port" env >/dev/null 2>&1
  kill "$peer" 2>/dev/null
  wait "$peer" 2>/dev/null
  cat "$log".* 2>/dev/null | grep -E "binding file [^ ]*(libgloo|libdtrain_gloo|libstdc)" |
    grep -E "once|pthread_once|pthread_mutex_trylock" | sed -e 's/^ *[0-9]*:[[:space:]]*//' \
    -e "s|$repo/||g" | sort -u | head -n 40
  rm -f "$log".*
  return 0
}
export -f gloo_debug
if grep -q $'^gloo_smoke\tfailed' "$steps"; then
  step gloo_debug 60 "$bench_log" gloo_debug
fi

summarize
exit $?
