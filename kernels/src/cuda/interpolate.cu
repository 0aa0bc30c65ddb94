// three_interpolate forward and its weight gradient (the feature gradient
// is the weighted scatter in gather_group.cu).
//
//   features [b][c][j], j < m      idx, weight [b][3i + t], t = 0, 1, 2
//   out      [b][c][i] = w0 * f[idx0] + w1 * f[idx1] + w2 * f[idx2]
//   grad_w   [b][3i + t] = sum_c grad_out[b][c][i] * f[b][c][idx[b][3i + t]]
//
// Rounded (unfused) arithmetic in the CPU's order, float32 accumulation
// (float64 for float64); weights and their gradient in that type too (Note
// [Interpolation weights in the accumulation type] in ../dispatch.h).
// Out-of-range indices read as zero features.
#include "cuda_check.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

constexpr unsigned int kThreads = 256;

template <typename T>
__device__ inline acc_t<T> feature_at(const T* row, std::int64_t j, std::int64_t m) {
  return (j >= 0 && j < m) ? to_acc(row[j]) : acc_t<T>(0);
}

template <typename T>
__global__ void three_interpolate_kernel(const T* __restrict__ features,
                                         const std::int64_t* __restrict__ idx,
                                         const acc_t<T>* __restrict__ weight, std::int64_t channels,
                                         std::int64_t m, std::int64_t n, std::int64_t total,
                                         T* __restrict__ out) {
  for (std::int64_t e = grid_start(); e < total; e += grid_stride()) {
    const std::int64_t i = e % n;
    const std::int64_t row = e / n;
    const std::int64_t at = (row / channels) * 3 * n + 3 * i;
    const T* f = features + row * m;
    acc_t<T> acc = mul_rn(weight[at], feature_at(f, idx[at], m));
    acc = add_rn(acc, mul_rn(weight[at + 1], feature_at(f, idx[at + 1], m)));
    acc = add_rn(acc, mul_rn(weight[at + 2], feature_at(f, idx[at + 2], m)));
    out[e] = from_acc<T>(acc);
  }
}

template <typename T>
__global__ void weight_grad_kernel(const T* __restrict__ grad_out, const T* __restrict__ features,
                                   const std::int64_t* __restrict__ idx, std::int64_t channels,
                                   std::int64_t m, std::int64_t n, std::int64_t total,
                                   acc_t<T>* __restrict__ grad_weight) {
  for (std::int64_t e = grid_start(); e < total; e += grid_stride()) {
    const std::int64_t b = e / (3 * n);
    const std::int64_t i = (e % (3 * n)) / 3;
    const std::int64_t j = idx[e];
    acc_t<T> acc = 0;
    for (std::int64_t c = 0; c < channels; ++c) {
      const std::int64_t row = b * channels + c;
      acc =
          add_rn(acc, mul_rn(to_acc(grad_out[row * n + i]), feature_at(features + row * m, j, m)));
    }
    grad_weight[e] = acc;
  }
}

template <typename T>
void launch_forward(const void* features, const std::int64_t* idx, const void* weight,
                    std::int64_t batch, std::int64_t channels, std::int64_t m, std::int64_t n,
                    void* out, cudaStream_t stream) {
  const std::int64_t total = batch * channels * n;
  if (total == 0) {
    return;
  }
  three_interpolate_kernel<T><<<grid_for(total, kThreads), kThreads, 0, stream>>>(
      static_cast<const T*>(features), idx, static_cast<const acc_t<T>*>(weight), channels, m, n,
      total, static_cast<T*>(out));
  DTRAIN_CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_weight_grad(const void* grad_out, const void* features, const std::int64_t* idx,
                        std::int64_t batch, std::int64_t channels, std::int64_t m, std::int64_t n,
                        void* grad_weight, cudaStream_t stream) {
  const std::int64_t total = batch * 3 * n;
  if (total == 0) {
    return;
  }
  weight_grad_kernel<T><<<grid_for(total, kThreads), kThreads, 0, stream>>>(
      static_cast<const T*>(grad_out), static_cast<const T*>(features), idx, channels, m, n, total,
      static_cast<acc_t<T>*>(grad_weight));
  DTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_three_interpolate(FloatType type, const void* features, const std::int64_t* idx,
                              const void* weight, std::int64_t batch, std::int64_t channels,
                              std::int64_t m, std::int64_t n, void* out, cudaStream_t stream) {
  switch (type) {
    case FloatType::kFloat32:
      return launch_forward<float>(features, idx, weight, batch, channels, m, n, out, stream);
    case FloatType::kFloat64:
      return launch_forward<double>(features, idx, weight, batch, channels, m, n, out, stream);
    case FloatType::kFloat16:
      return launch_forward<__half>(features, idx, weight, batch, channels, m, n, out, stream);
    case FloatType::kBFloat16:
      return launch_forward<__nv_bfloat16>(features, idx, weight, batch, channels, m, n, out,
                                           stream);
  }
  throw std::invalid_argument("launch_three_interpolate: unknown FloatType");
}

void launch_three_interpolate_weight_grad(FloatType type, const void* grad_out,
                                          const void* features, const std::int64_t* idx,
                                          std::int64_t batch, std::int64_t channels, std::int64_t m,
                                          std::int64_t n, void* grad_weight, cudaStream_t stream) {
  switch (type) {
    case FloatType::kFloat32:
      return launch_weight_grad<float>(grad_out, features, idx, batch, channels, m, n, grad_weight,
                                       stream);
    case FloatType::kFloat64:
      return launch_weight_grad<double>(grad_out, features, idx, batch, channels, m, n, grad_weight,
                                        stream);
    case FloatType::kFloat16:
      return launch_weight_grad<__half>(grad_out, features, idx, batch, channels, m, n, grad_weight,
                                        stream);
    case FloatType::kBFloat16:
      return launch_weight_grad<__nv_bfloat16>(grad_out, features, idx, batch, channels, m, n,
                                               grad_weight, stream);
  }
  throw std::invalid_argument("launch_three_interpolate_weight_grad: unknown FloatType");
}

}  // namespace dtrain::kernels::cuda
