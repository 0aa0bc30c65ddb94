// three_interpolate on CPU: the forward and the weight gradient (the
// feature gradient is scatter_add_points_cpu with weights). Weights and
// accumulation in the features' opmath type (float32; float64 for float64:
// Note [Interpolation weights in the accumulation type] in dispatch.h), terms
// added in the order j = 0, 1, 2 and c = 0, 1, ..., as the CUDA kernels do.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <cstdint>

#include "../dispatch.h"

namespace dtrain::kernels::detail {

at::Tensor three_interpolate_cpu(const at::Tensor& features, const at::Tensor& idx,
                                 const at::Tensor& weight) {
  const int64_t batch = features.size(0);
  const int64_t channels = features.size(1);
  const int64_t m = features.size(2);
  const int64_t n = idx.size(1) / 3;
  at::Tensor out = at::empty({batch, channels, n}, features.options());
  const int64_t* index = idx.const_data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, features.scalar_type(), "three_interpolate_cpu", [&] {
        using acc_t = at::opmath_type<scalar_t>;
        const scalar_t* f = features.const_data_ptr<scalar_t>();
        const acc_t* w = weight.const_data_ptr<acc_t>();
        scalar_t* result = out.mutable_data_ptr<scalar_t>();
        at::parallel_for(
            0, batch * channels, /*grain_size=*/1 + 4096 / (n + 1),
            [&](int64_t begin, int64_t end) {
              for (int64_t row = begin; row < end; ++row) {
                const int64_t b = row / channels;
                const scalar_t* f_row = f + row * m;
                const int64_t* i_row = index + b * 3 * n;
                const acc_t* w_row = w + b * 3 * n;
                scalar_t* target = result + row * n;
                for (int64_t i = 0; i < n; ++i) {
                  acc_t acc = w_row[3 * i] * static_cast<acc_t>(f_row[i_row[3 * i]]);
                  acc += w_row[3 * i + 1] * static_cast<acc_t>(f_row[i_row[3 * i + 1]]);
                  acc += w_row[3 * i + 2] * static_cast<acc_t>(f_row[i_row[3 * i + 2]]);
                  target[i] = static_cast<scalar_t>(acc);
                }
              }
            });
      });
  return out;
}

at::Tensor three_interpolate_weight_grad_cpu(const at::Tensor& grad_out, const at::Tensor& features,
                                             const at::Tensor& idx) {
  const int64_t batch = features.size(0);
  const int64_t channels = features.size(1);
  const int64_t m = features.size(2);
  const int64_t l = idx.size(1);
  const int64_t n = l / 3;
  at::Tensor grad = at::empty({batch, l}, features.options().dtype(weight_dtype(features)));
  const int64_t* index = idx.const_data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, features.scalar_type(), "three_interpolate_weight_grad_cpu", [&] {
        using acc_t = at::opmath_type<scalar_t>;
        const scalar_t* f = features.const_data_ptr<scalar_t>();
        const scalar_t* g = grad_out.const_data_ptr<scalar_t>();
        acc_t* result = grad.mutable_data_ptr<acc_t>();
        at::parallel_for(0, batch * l, /*grain_size=*/1 + 4096 / (channels + 1),
                         [&](int64_t begin, int64_t end) {
                           for (int64_t q = begin; q < end; ++q) {
                             const int64_t b = q / l;
                             const int64_t i = q % l;
                             const scalar_t* f_b = f + b * channels * m + index[q];
                             const scalar_t* g_b = g + b * channels * n + i / 3;
                             acc_t acc = 0;
                             for (int64_t c = 0; c < channels; ++c) {
                               acc +=
                                   static_cast<acc_t>(g_b[c * n]) * static_cast<acc_t>(f_b[c * m]);
                             }
                             result[q] = acc;
                           }
                         });
      });
  return grad;
}

}  // namespace dtrain::kernels::detail
