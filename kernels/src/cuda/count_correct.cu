// count_correct: one thread per row of logits (B x C, row-major), each
// finding its row's argmax and adding a hit to one 64-bit counter.
//
//   logits  [row 0: c0 c1 ... cC-1][row 1: ...] ...
//   labels  [l0 l1 ... lB-1]
//   counter += #{ row : argmax(logits[row]) == labels[row] }
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.cuh"
#include "launchers.h"

namespace dtrain::kernels::cuda {

namespace {

__device__ inline float to_float(float v) {
  return v;
}
__device__ inline float to_float(double v) {
  return static_cast<float>(v);
}
__device__ inline float to_float(__half v) {
  return __half2float(v);
}
__device__ inline float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

// Same rules as the CPU kernel and torch.argmax: first maximum wins, NaN is largest.
template <typename T>
__global__ void count_correct_kernel(const T* __restrict__ logits,
                                     const std::int64_t* __restrict__ labels, std::int64_t rows,
                                     std::int64_t cols, unsigned long long* counter) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) {
    return;
  }
  const T* values = logits + row * cols;
  std::int64_t best = 0;
  float best_value = to_float(values[0]);
  for (std::int64_t j = 1; j < cols && !isnan(best_value); ++j) {
    const float value = to_float(values[j]);
    if (value > best_value || isnan(value)) {
      best = j;
      best_value = value;
    }
  }
  if (best == labels[row]) {
    atomicAdd(counter, 1ULL);
  }
}

template <typename T>
void launch(const void* logits, const std::int64_t* labels, std::int64_t rows, std::int64_t cols,
            unsigned long long* counter, cudaStream_t stream) {
  if (rows == 0) {
    return;
  }
  constexpr unsigned int kThreads = 256;
  count_correct_kernel<T><<<blocks_for(rows, kThreads), kThreads, 0, stream>>>(
      static_cast<const T*>(logits), labels, rows, cols, counter);
  DTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_count_correct(FloatType type, const void* logits, const std::int64_t* labels,
                          std::int64_t rows, std::int64_t cols, unsigned long long* counter,
                          cudaStream_t stream) {
  switch (type) {
    case FloatType::kFloat32:
      return launch<float>(logits, labels, rows, cols, counter, stream);
    case FloatType::kFloat64:
      return launch<double>(logits, labels, rows, cols, counter, stream);
    case FloatType::kFloat16:
      return launch<__half>(logits, labels, rows, cols, counter, stream);
    case FloatType::kBFloat16:
      return launch<__nv_bfloat16>(logits, labels, rows, cols, counter, stream);
  }
  throw std::invalid_argument("launch_count_correct: unknown FloatType");
}

}  // namespace dtrain::kernels::cuda
