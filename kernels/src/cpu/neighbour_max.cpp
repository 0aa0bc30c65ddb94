// The CPU passes of neighbour_max (src/neighbour_max.cpp): groups of K rows
// of C channels, channels innermost, so the inner loops run over contiguous
// memory and vectorise (this file compiles with -O3), in the widest vector
// build the CPU runs (vector_build.h; DTRAIN_CPU_NEIGHBOUR_MAX = baseline |
// avx2 | avx512 forces one, for tests and benchmarks).
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
#include "vector_build.h"

namespace dtrain::kernels::detail {

namespace {

// Groups per parallel task: each group is K x C values.
constexpr int64_t kGroupsPerTask = 16;

#define DTRAIN_NEIGHBOUR_MAX_INLINE inline __attribute__((always_inline))

// The maximum of each group's K rows, per channel, for groups [first, last),
// compared in RowValues<Scalar>::compute_type (float for bfloat16, whose
// values it holds exactly, so the winner's bits are copied back unchanged;
// `widened` holds a group's maxima in float then).
template <typename Scalar, typename Compute = typename RowValues<Scalar>::compute_type>
DTRAIN_NEIGHBOUR_MAX_INLINE void max_of_group_range(const Scalar* x, int64_t first, int64_t last,
                                                    int64_t neighbours, int64_t channels,
                                                    Scalar* out, int32_t* arg, Compute* widened) {
  using Values = RowValues<Scalar>;
  for (int64_t group = first; group < last; ++group) {
    const Scalar* __restrict rows = x + group * neighbours * channels;
    Compute* __restrict best = nullptr;
    if constexpr (std::is_same_v<Compute, Scalar>) {
      best = out + group * channels;
    } else {
      best = widened;
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
}

// An unsigned integer of Scalar's size; zero bits are +0 in each type.
template <typename Scalar>
using BitsOf = std::conditional_t<sizeof(Scalar) == 2, uint16_t,
                                  std::conditional_t<sizeof(Scalar) == 4, uint32_t, uint64_t>>;

// A value's bits and back (bfloat16 through its member: GCC vectorises
// that, not a bit_cast of the struct).
template <typename Scalar>
DTRAIN_NEIGHBOUR_MAX_INLINE BitsOf<Scalar> to_bits(Scalar value) {
  if constexpr (std::is_same_v<Scalar, c10::BFloat16>) {
    return value.x;
  } else {
    return std::bit_cast<BitsOf<Scalar>>(value);
  }
}
template <typename Scalar>
DTRAIN_NEIGHBOUR_MAX_INLINE Scalar from_bits(BitsOf<Scalar> bits) {
  if constexpr (std::is_same_v<Scalar, c10::BFloat16>) {
    return c10::BFloat16(bits, c10::BFloat16::from_bits());
  } else {
    return std::bit_cast<Scalar>(bits);
  }
}

// Each group's gradient to the rows that won, zero to the others, for
// groups [first, last).
template <typename Scalar>
DTRAIN_NEIGHBOUR_MAX_INLINE void spread_group_range(const Scalar* grad, const int32_t* arg,
                                                    int64_t first, int64_t last, int64_t neighbours,
                                                    int64_t channels, Scalar* grad_in) {
  using Bits = BitsOf<Scalar>;
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
}

// The two loops compiled for one vector build (vector_build.h).
#define DTRAIN_NEIGHBOUR_MAX_PASSES(Name, ATTRIBUTES)                                            \
  template <typename Scalar>                                                                     \
  struct Name {                                                                                  \
    using Compute = typename RowValues<Scalar>::compute_type;                                    \
    ATTRIBUTES static void max(const Scalar* x, int64_t first, int64_t last, int64_t neighbours, \
                               int64_t channels, Scalar* out, int32_t* arg, Compute* widened) {  \
      max_of_group_range(x, first, last, neighbours, channels, out, arg, widened);               \
    }                                                                                            \
    ATTRIBUTES static void spread(const Scalar* grad, const int32_t* arg, int64_t first,         \
                                  int64_t last, int64_t neighbours, int64_t channels,            \
                                  Scalar* grad_in) {                                             \
      spread_group_range(grad, arg, first, last, neighbours, channels, grad_in);                 \
    }                                                                                            \
  };

DTRAIN_NEIGHBOUR_MAX_PASSES(BaselinePasses, )
#if defined(__x86_64__)
DTRAIN_NEIGHBOUR_MAX_PASSES(Avx2Passes, DTRAIN_TARGET_AVX2)
DTRAIN_NEIGHBOUR_MAX_PASSES(Avx512Passes, DTRAIN_TARGET_AVX512)
#endif
#undef DTRAIN_NEIGHBOUR_MAX_PASSES

// Runs `run` with the passes of the build DTRAIN_CPU_NEIGHBOUR_MAX or the
// CPU chooses, for Scalar.
template <typename Scalar, typename Run>
void with_passes(Run&& run) {
  switch (vector_build("DTRAIN_CPU_NEIGHBOUR_MAX")) {
#if defined(__x86_64__)
    case VectorBuild::kAvx512:
      return run(Avx512Passes<Scalar>{});
    case VectorBuild::kAvx2:
      return run(Avx2Passes<Scalar>{});
#endif
    default:
      return run(BaselinePasses<Scalar>{});
  }
}

template <typename Scalar>
void max_of_groups(const Scalar* x, int64_t groups, int64_t neighbours, int64_t channels,
                   Scalar* out, int32_t* arg) {
  with_passes<Scalar>([&](auto passes) {
    using Compute = typename RowValues<Scalar>::compute_type;
    at::parallel_for(0, groups, kGroupsPerTask, [&](int64_t first, int64_t last) {
      std::vector<Compute> widened(std::is_same_v<Compute, Scalar> ? 0 : channels);
      decltype(passes)::max(x, first, last, neighbours, channels, out, arg, widened.data());
    });
  });
}

template <typename Scalar>
void spread_groups(const Scalar* grad, const int32_t* arg, int64_t groups, int64_t neighbours,
                   int64_t channels, Scalar* grad_in) {
  with_passes<Scalar>([&](auto passes) {
    at::parallel_for(0, groups, kGroupsPerTask, [&](int64_t first, int64_t last) {
      decltype(passes)::spread(grad, arg, first, last, neighbours, channels, grad_in);
    });
  });
}

}  // namespace

#undef DTRAIN_NEIGHBOUR_MAX_INLINE

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
