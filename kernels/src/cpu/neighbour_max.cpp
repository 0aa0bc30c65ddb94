// The CPU passes of neighbour_max (src/neighbour_max.cpp): groups of K rows
// of C channels, channels innermost, so the inner loops run over contiguous
// memory and vectorise (this file compiles with -O3).
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../dispatch.h"
#include "bfloat16_values.h"

namespace dtrain::kernels::detail {

namespace {

// Groups per parallel task: each group is K x C values.
constexpr int64_t kGroupsPerTask = 16;

// The maximum of each group's K rows, per channel, compared in
// RowValues<Scalar>::compute_type (float for bfloat16, whose values it
// holds exactly, so the winner's bits are copied back unchanged).
template <typename Scalar>
void max_of_groups(const Scalar* x, int64_t groups, int64_t neighbours, int64_t channels,
                   Scalar* out, int32_t* arg) {
  using Values = RowValues<Scalar>;
  using Compute = typename Values::compute_type;
  at::parallel_for(0, groups, kGroupsPerTask, [&](int64_t first, int64_t last) {
    std::vector<Compute> widened(std::is_same_v<Compute, Scalar> ? 0 : channels);
    for (int64_t group = first; group < last; ++group) {
      const Scalar* __restrict rows = x + group * neighbours * channels;
      Compute* __restrict best = nullptr;
      if constexpr (std::is_same_v<Compute, Scalar>) {
        best = out + group * channels;
      } else {
        best = widened.data();
      }
      int32_t* __restrict best_at = arg + group * channels;
      for (int64_t c = 0; c < channels; ++c) {
        best[c] = Values::load(rows[c]);
      }
      std::fill(best_at, best_at + channels, 0);
      for (int64_t k = 1; k < neighbours; ++k) {
        const Scalar* __restrict row = rows + k * channels;
        const int32_t index = static_cast<int32_t>(k);
        for (int64_t c = 0; c < channels; ++c) {
          // at::max(dim)'s rule: a larger value, or the first NaN, takes
          // over; once the maximum is NaN it stays.
          const Compute v = Values::load(row[c]);
          const Compute b = best[c];
          const bool take = !(v <= b) && (b == b);
          best[c] = take ? v : b;
          best_at[c] = take ? index : best_at[c];
        }
      }
      if constexpr (!std::is_same_v<Compute, Scalar>) {
        // The winner's own bits, NaN payloads included.
        Scalar* best_out = out + group * channels;
        for (int64_t c = 0; c < channels; ++c) {
          best_out[c] = rows[best_at[c] * channels + c];
        }
      }
    }
  });
}

// An unsigned integer of Scalar's size; zero bits are +0 in each type.
template <typename Scalar>
using BitsOf = std::conditional_t<sizeof(Scalar) == 2, uint16_t,
                                  std::conditional_t<sizeof(Scalar) == 4, uint32_t, uint64_t>>;

// A value's bits and back (bfloat16 through its member: GCC vectorises
// that, not a bit_cast of the struct).
template <typename Scalar>
inline BitsOf<Scalar> to_bits(Scalar value) {
  if constexpr (std::is_same_v<Scalar, c10::BFloat16>) {
    return value.x;
  } else {
    return std::bit_cast<BitsOf<Scalar>>(value);
  }
}
template <typename Scalar>
inline Scalar from_bits(BitsOf<Scalar> bits) {
  if constexpr (std::is_same_v<Scalar, c10::BFloat16>) {
    return c10::BFloat16(bits, c10::BFloat16::from_bits());
  } else {
    return std::bit_cast<Scalar>(bits);
  }
}

template <typename Scalar>
void spread_groups(const Scalar* grad, const int32_t* arg, int64_t groups, int64_t neighbours,
                   int64_t channels, Scalar* grad_in) {
  using Bits = BitsOf<Scalar>;
  at::parallel_for(0, groups, kGroupsPerTask, [&](int64_t first, int64_t last) {
    for (int64_t group = first; group < last; ++group) {
      const Scalar* __restrict g = grad + group * channels;
      const int32_t* __restrict best_at = arg + group * channels;
      for (int64_t k = 0; k < neighbours; ++k) {
        Scalar* __restrict row = grad_in + (group * neighbours + k) * channels;
        const int32_t index = static_cast<int32_t>(k);
        // The gradient's bits or zero's, selected as integers: a plain
        // select that vectorises for bfloat16 too.
        for (int64_t c = 0; c < channels; ++c) {
          const Bits bits = to_bits(g[c]);  // loaded whatever the test: no branch
          row[c] = from_bits<Scalar>(best_at[c] == index ? bits : Bits(0));
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
  AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, rows.scalar_type(), "neighbour_max_cpu", [&] {
    max_of_groups(rows.const_data_ptr<scalar_t>(), batch * centres, neighbours, channels,
                  result.values.data_ptr<scalar_t>(), result.argmax.data_ptr<int32_t>());
  });
  return result;
}

at::Tensor neighbour_max_backward_cpu(const at::Tensor& grad, const at::Tensor& argmax,
                                      int64_t neighbours) {
  const int64_t batch = grad.size(0);
  const int64_t centres = grad.size(1);
  const int64_t channels = grad.size(2);
  at::Tensor grad_in = at::empty({batch, centres, neighbours, channels}, grad.options());
  AT_DISPATCH_FLOATING_TYPES_AND(
      at::kBFloat16, grad.scalar_type(), "neighbour_max_backward_cpu", [&] {
        spread_groups(grad.const_data_ptr<scalar_t>(), argmax.const_data_ptr<int32_t>(),
                      batch * centres, neighbours, channels, grad_in.data_ptr<scalar_t>());
      });
  return grad_in;
}

}  // namespace dtrain::kernels::detail
