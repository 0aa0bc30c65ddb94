#!/usr/bin/env bash
# A machine without a CUDA toolkit, made in a private mount namespace: the
# system toolkit (/usr/local/cuda*) and every nvcc on PATH are hidden. Then
# scripts/bootstrap.sh must put CUDA 13.0 together from NVIDIA's wheels, its
# nvcc must compile and link a file that uses CUB and warp reductions for
# sm_90 (as dtrain's kernels do), and a configure run by hand (CMake finding
# the toolkit itself) must take it, LibTorch's CUDA config included (which
# stops without nvcc).
#
#   toolkit_from_wheels_test.sh WORK_DIR
#
# Exits 77 (skipped) where no mount namespace can be made (not root).
set -euo pipefail
work="$1"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

if [[ ${1:-} != --inside ]]; then
  if ! unshare --mount true 2>/dev/null; then
    echo "skipped: cannot make a mount namespace here (needs root)"
    exit 77
  fi
  exec unshare --mount bash "${BASH_SOURCE[0]}" --inside "$work"
fi
work="$2"
rm -rf "$work" && mkdir -p "$work/empty"
printf '#!/bin/sh\nexit 127\n' >"$work/no_nvcc" && chmod +x "$work/no_nvcc"
for dir in /usr/local/cuda /usr/local/cuda-*; do
  if [[ -d $dir ]]; then mount --bind "$work/empty" "$dir"; fi
done
IFS=: read -r -a path_dirs <<<"$PATH"
for dir in "${path_dirs[@]}"; do
  if [[ -e $dir/nvcc ]]; then mount --bind "$work/no_nvcc" "$dir/nvcc"; fi
done
if nvcc --version >/dev/null 2>&1; then
  echo "FAILED: nvcc still runs after hiding the toolkit"
  exit 1
fi

# The toolkit is put together in the work folder, from the wheels in the
# shared venv (installed there on the first run).
export DTRAIN_WHEEL_CUDA_HOME="$work/cuda-13.0"
bash "$repo/scripts/bootstrap.sh"
path_before="$PATH"
source "$repo/scripts/common.sh"
nvcc --version | grep -q "release 13.0" || { echo "FAILED: no CUDA 13.0 nvcc after bootstrap"; exit 1; }
case "$(command -v nvcc)" in
  "$DTRAIN_WHEEL_CUDA_HOME"/*) ;;
  *) echo "FAILED: nvcc is $(command -v nvcc), not the wheels' toolkit"; exit 1 ;;
esac

cat >"$work/probe.cu" <<'CU'
#include <cub/block/block_radix_sort.cuh>
#include <cstdio>
__global__ void largest(const int* in, int* out) {
  out[threadIdx.x] = __reduce_max_sync(0xffffffffu, in[threadIdx.x]);
}
int main() {
  int* d = nullptr;
  std::printf("%s\n", cudaGetErrorName(cudaMalloc(&d, 256)));
}
CU
nvcc -arch=sm_90 -std=c++17 "$work/probe.cu" -o "$work/probe"

# Configured as by hand, with the PATH from before the scripts' settings:
# CMake itself must find the assembled toolkit.
torch_prefix="$("$DTRAIN_VENV/bin/python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
PATH="$path_before" cmake -S "$repo" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$torch_prefix" -DDTRAIN_BUILD_TESTS=OFF -DDTRAIN_BUILD_BENCHMARKS=OFF \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; echo "FAILED: configure"; exit 1; }
for line in "the one from NVIDIA's wheels in $DTRAIN_WHEEL_CUDA_HOME" "dtrain: CUDA 13.0" \
  "PyTorch: CUDA detected: 13.0" "dtrain: NCCL"; do
  grep -q "$line" "$work/configure.log" || { cat "$work/configure.log"; echo "FAILED: no '$line'"; exit 1; }
done
echo "toolkit from wheels ok: $(nvcc --version | tail -n 1), probe compiled, dtrain configured"
