// Gather along the point axis and its backward scatter-add, on CPU, for
// channel-major features (B, C, N) and for point-major ones (B, N, C; Note
// [point-major features] in dispatch.h). Every element of a scatter's
// output is written by one thread only, so it needs no atomics and sums in
// increasing index order whatever the thread count (kAtomic and
// kDeterministic are the same here).
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../dispatch.h"

namespace dtrain::kernels::detail {

namespace {

// The output row itself when it has the accumulation type, else null.
template <typename acc_t, typename scalar_t>
acc_t* accumulate_in_place(scalar_t* row) {
  if constexpr (std::is_same_v<acc_t, scalar_t>) {
    return row;
  } else {
    return nullptr;
  }
}

}  // namespace

at::Tensor gather_points_cpu(const at::Tensor& features, const at::Tensor& idx) {
  const int64_t batch = features.size(0);
  const int64_t channels = features.size(1);
  const int64_t n = features.size(2);
  const int64_t l = idx.size(1);
  at::Tensor out = at::empty({batch, channels, l}, features.options());
  const int64_t* index = idx.const_data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, features.scalar_type(), "gather_points_cpu", [&] {
        const scalar_t* in = features.const_data_ptr<scalar_t>();
        scalar_t* result = out.mutable_data_ptr<scalar_t>();
        const int64_t grain = 1 + 4096 / (l + 1);
        at::parallel_for(0, batch * channels, grain, [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            const scalar_t* source = in + row * n;
            const int64_t* row_index = index + (row / channels) * l;
            scalar_t* target = result + row * l;
            for (int64_t i = 0; i < l; ++i) {
              target[i] = source[row_index[i]];
            }
          }
        });
      });
  return out;
}

at::Tensor scatter_add_points_cpu(const at::Tensor& grad_out, const at::Tensor& idx,
                                  const at::Tensor& weight, int64_t n, ScatterMode /*mode*/) {
  const int64_t batch = grad_out.size(0);
  const int64_t channels = grad_out.size(1);
  const int64_t out_len = grad_out.size(2);
  const int64_t l = idx.size(1);
  const int64_t group = out_len > 0 ? l / out_len : 1;
  at::Tensor grad = at::zeros({batch, channels, n}, grad_out.options());
  const int64_t* index = idx.const_data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, grad_out.scalar_type(), "scatter_add_points_cpu", [&] {
        using acc_t = at::opmath_type<scalar_t>;
        const scalar_t* g = grad_out.const_data_ptr<scalar_t>();
        const acc_t* w = weight.defined() ? weight.const_data_ptr<acc_t>() : nullptr;
        scalar_t* result = grad.mutable_data_ptr<scalar_t>();
        at::parallel_for(0, batch * channels, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
          // float16/bfloat16 accumulate in a float32 row, then round once.
          std::vector<acc_t> scratch;
          for (int64_t row = begin; row < end; ++row) {
            const int64_t b = row / channels;
            const scalar_t* g_row = g + row * out_len;
            const int64_t* row_index = index + b * l;
            const acc_t* w_row = w != nullptr ? w + b * l : nullptr;
            acc_t* acc = accumulate_in_place<acc_t>(result + row * n);
            const bool in_place = acc != nullptr;
            if (!in_place) {
              scratch.assign(n, acc_t(0));
              acc = scratch.data();
            }
            // Index i = j * group + k takes gradient j: walking j and k
            // visits i in increasing order (the same sums, bit for bit)
            // without a division per element.
            if (w_row == nullptr) {
              for (int64_t j = 0, i = 0; j < out_len; ++j) {
                const acc_t term = static_cast<acc_t>(g_row[j]);
                for (int64_t k = 0; k < group; ++k, ++i) {
                  acc[row_index[i]] += term;
                }
              }
            } else {
              for (int64_t j = 0, i = 0; j < out_len; ++j) {
                const acc_t term = static_cast<acc_t>(g_row[j]);
                for (int64_t k = 0; k < group; ++k, ++i) {
                  acc[row_index[i]] += w_row[i] * term;
                }
              }
            }
            if (!in_place) {
              scalar_t* target = result + row * n;
              for (int64_t j = 0; j < n; ++j) {
                target[j] = static_cast<scalar_t>(acc[j]);
              }
            }
          }
        });
      });
  return grad;
}

at::Tensor gather_rows_cpu(const at::Tensor& rows, const at::Tensor& idx) {
  const int64_t batch = rows.size(0);
  const int64_t n = rows.size(1);
  const int64_t channels = rows.size(2);
  const int64_t l = idx.size(1);
  at::Tensor out = at::empty({batch, l, channels}, rows.options());
  const int64_t* index = idx.const_data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, rows.scalar_type(), "gather_rows_cpu", [&] {
        const scalar_t* in = rows.const_data_ptr<scalar_t>();
        scalar_t* result = out.mutable_data_ptr<scalar_t>();
        const int64_t grain = 1 + 4096 / (channels + 1);
        at::parallel_for(0, batch * l, grain, [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            const scalar_t* source = in + ((row / l) * n + index[row]) * channels;
            std::copy(source, source + channels, result + row * channels);
          }
        });
      });
  return out;
}

at::Tensor scatter_add_rows_cpu(const at::Tensor& grad_rows, const at::Tensor& idx, int64_t n) {
  const int64_t batch = grad_rows.size(0);
  const int64_t l = grad_rows.size(1);
  const int64_t channels = grad_rows.size(2);
  const int64_t batch_stride = grad_rows.stride(0);
  const int64_t row_stride = grad_rows.stride(1);
  at::Tensor grad = at::zeros({batch, n, channels}, grad_rows.options());
  const int64_t* index = idx.const_data_ptr<int64_t>();
  // One task per (batch, block of channels): each output element is summed
  // by one thread, in increasing l, with no atomics.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (channels + kBlock - 1) / kBlock;
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, grad_rows.scalar_type(), "scatter_add_rows_cpu", [&] {
        using acc_t = at::opmath_type<scalar_t>;
        const scalar_t* g = grad_rows.const_data_ptr<scalar_t>();
        scalar_t* result = grad.mutable_data_ptr<scalar_t>();
        at::parallel_for(0, batch * blocks, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
          std::vector<acc_t> scratch;
          for (int64_t task = begin; task < end; ++task) {
            const int64_t b = task / blocks;
            const int64_t first_channel = (task % blocks) * kBlock;
            const int64_t width = std::min(kBlock, channels - first_channel);
            scalar_t* target = result + b * n * channels + first_channel;
            // Sums in the gradient itself when it has the accumulation
            // type, else in float32 rows rounded once at the end.
            acc_t* acc = accumulate_in_place<acc_t>(target);
            const bool in_place = acc != nullptr;
            const int64_t acc_stride = in_place ? channels : width;
            if (!in_place) {
              scratch.assign(n * width, acc_t(0));
              acc = scratch.data();
            }
            const int64_t* row_index = index + b * l;
            const scalar_t* g_batch = g + b * batch_stride + first_channel;
            for (int64_t i = 0; i < l; ++i) {
              acc_t* sum = acc + row_index[i] * acc_stride;
              const scalar_t* term = g_batch + i * row_stride;
              for (int64_t c = 0; c < width; ++c) {
                sum[c] += static_cast<acc_t>(term[c]);
              }
            }
            if (!in_place) {
              for (int64_t j = 0; j < n; ++j) {
                for (int64_t c = 0; c < width; ++c) {
                  target[j * channels + c] = static_cast<scalar_t>(acc[j * width + c]);
                }
              }
            }
          }
        });
      });
  return grad;
}

}  // namespace dtrain::kernels::detail
