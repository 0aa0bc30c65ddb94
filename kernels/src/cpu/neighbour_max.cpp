// The CPU passes of neighbour_max (src/neighbour_max.cpp): groups of K rows
// of C channels, channels innermost, so the inner loops run over contiguous
// memory and vectorise (this file compiles with -O3).
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstdint>

#include "../dispatch.h"

namespace dtrain::kernels::detail {

namespace {

// Groups per parallel task: each group is K x C values.
constexpr int64_t kGroupsPerTask = 16;

template <typename Scalar>
void max_of_groups(const Scalar* x, int64_t groups, int64_t neighbours, int64_t channels,
                   Scalar* out, int32_t* arg) {
  at::parallel_for(0, groups, kGroupsPerTask, [&](int64_t first, int64_t last) {
    for (int64_t group = first; group < last; ++group) {
      const Scalar* __restrict rows = x + group * neighbours * channels;
      Scalar* __restrict best = out + group * channels;
      int32_t* __restrict best_at = arg + group * channels;
      std::copy(rows, rows + channels, best);
      std::fill(best_at, best_at + channels, 0);
      for (int64_t k = 1; k < neighbours; ++k) {
        const Scalar* __restrict row = rows + k * channels;
        const int32_t index = static_cast<int32_t>(k);
        for (int64_t c = 0; c < channels; ++c) {
          // at::max(dim)'s rule: a larger value, or the first NaN, takes
          // over; once the maximum is NaN it stays.
          const Scalar v = row[c];
          const Scalar b = best[c];
          const bool take = !(v <= b) && (b == b);
          best[c] = take ? v : b;
          best_at[c] = take ? index : best_at[c];
        }
      }
    }
  });
}

template <typename Scalar>
void spread_groups(const Scalar* grad, const int32_t* arg, int64_t groups, int64_t neighbours,
                   int64_t channels, Scalar* grad_in) {
  at::parallel_for(0, groups, kGroupsPerTask, [&](int64_t first, int64_t last) {
    for (int64_t group = first; group < last; ++group) {
      const Scalar* __restrict g = grad + group * channels;
      const int32_t* __restrict best_at = arg + group * channels;
      for (int64_t k = 0; k < neighbours; ++k) {
        Scalar* __restrict row = grad_in + (group * neighbours + k) * channels;
        const int32_t index = static_cast<int32_t>(k);
        for (int64_t c = 0; c < channels; ++c) {
          row[c] = best_at[c] == index ? g[c] : Scalar(0);
        }
      }
    }
  });
}

}  // namespace

NeighbourMax neighbour_max_cpu(const at::Tensor& rows) {
  const int64_t batch = rows.size(0);
  const int64_t centres = rows.size(1);
  const int64_t neighbours = rows.size(2);
  const int64_t channels = rows.size(3);
  NeighbourMax result{at::empty({batch, centres, channels}, rows.options()),
                      at::empty({batch, centres, channels}, rows.options().dtype(at::kInt))};
  if (rows.scalar_type() == at::kDouble) {
    max_of_groups(rows.const_data_ptr<double>(), batch * centres, neighbours, channels,
                  result.values.data_ptr<double>(), result.argmax.data_ptr<int32_t>());
  } else {
    max_of_groups(rows.const_data_ptr<float>(), batch * centres, neighbours, channels,
                  result.values.data_ptr<float>(), result.argmax.data_ptr<int32_t>());
  }
  return result;
}

at::Tensor neighbour_max_backward_cpu(const at::Tensor& grad, const at::Tensor& argmax,
                                      int64_t neighbours) {
  const int64_t batch = grad.size(0);
  const int64_t centres = grad.size(1);
  const int64_t channels = grad.size(2);
  at::Tensor grad_in = at::empty({batch, centres, neighbours, channels}, grad.options());
  if (grad.scalar_type() == at::kDouble) {
    spread_groups(grad.const_data_ptr<double>(), argmax.const_data_ptr<int32_t>(), batch * centres,
                  neighbours, channels, grad_in.data_ptr<double>());
  } else {
    spread_groups(grad.const_data_ptr<float>(), argmax.const_data_ptr<int32_t>(), batch * centres,
                  neighbours, channels, grad_in.data_ptr<float>());
  }
  return grad_in;
}

}  // namespace dtrain::kernels::detail
