// Internal: the loops of the fused batch norm + ReLU (cpu/batch_norm_relu.cpp)
// over rows [begin, end) of `channels` values each, channels innermost, so
// that the inner loops run over contiguous memory and vectorise. Every
// loop is elementwise across channels: a channel's sum runs over its rows
// in order whatever the vector width, so the baseline and AVX2 builds of
// these loops give the same bits.
//
// Rows are stored as `Storage` (float, double or c10::BFloat16) and read,
// computed and summed in RowValues<Storage>::compute_type (float for
// bfloat16), the type of the per-channel vectors; results written back to
// rows are rounded to Storage.
//
// They are always inlined, so that each compiles with the instruction set
// of the function that calls it (BaselinePasses and Avx2Passes in
// cpu/batch_norm_relu.cpp).
//
// The ReLU's mask is recomputed in the backward from the input, with
// normalized(), the very expression the forward used: the file compiles
// with -ffp-contract=off, so no multiply-add is fused in one loop and not in
// the other, and the mask is the forward's bit for bit.
#pragma once

#include <cstdint>

#include "bfloat16_values.h"

#define DTRAIN_NORM_RELU_INLINE inline __attribute__((always_inline))

namespace dtrain::kernels::detail {

template <typename Scalar>
DTRAIN_NORM_RELU_INLINE Scalar normalized(Scalar x, Scalar scale, Scalar shift) {
  return x * scale + shift;
}

// ReLU as torch computes it (clamp_min): NaN stays NaN.
template <typename Scalar>
DTRAIN_NORM_RELU_INLINE Scalar relu(Scalar v) {
  return v < Scalar(0) ? Scalar(0) : v;
}

// The gradient the ReLU passed back: grad where the output is > 0 (NaN
// included, as torch's threshold_backward passes it), i.e. where
// !(v <= 0); else 0, even for an infinite or NaN grad. Both operands are
// plain values, so the compiler makes this a select rather than a branch,
// and the loops calling it vectorise.
template <typename Scalar>
DTRAIN_NORM_RELU_INLINE Scalar passed_grad(Scalar x, Scalar grad, Scalar scale, Scalar shift) {
  return !(normalized(x, scale, shift) <= Scalar(0)) ? grad : Scalar(0);
}

// The type a loop over rows of Storage computes in.
template <typename Storage>
using ComputeOf = typename RowValues<Storage>::compute_type;

// acc[c] += x[r][c]
template <typename Storage, typename Scalar = ComputeOf<Storage>>
DTRAIN_NORM_RELU_INLINE void add_rows(const Storage* __restrict x, int64_t begin, int64_t end,
                                      int64_t channels, Scalar* __restrict acc) {
  for (int64_t r = begin; r < end; ++r) {
    const Storage* __restrict row = x + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      acc[c] += RowValues<Storage>::load(row[c]);
    }
  }
}

// acc[c] += (x[r][c] - mean[c])^2
template <typename Storage, typename Scalar = ComputeOf<Storage>>
DTRAIN_NORM_RELU_INLINE void add_squared_deviation_rows(const Storage* __restrict x,
                                                        const Scalar* __restrict mean,
                                                        int64_t begin, int64_t end,
                                                        int64_t channels, Scalar* __restrict acc) {
  for (int64_t r = begin; r < end; ++r) {
    const Storage* __restrict row = x + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const Scalar d = RowValues<Storage>::load(row[c]) - mean[c];
      acc[c] += d * d;
    }
  }
}

// y[r][c] = relu(x[r][c] * scale[c] + shift[c])
template <typename Storage, typename Scalar = ComputeOf<Storage>>
DTRAIN_NORM_RELU_INLINE void normalize_relu_rows(const Storage* __restrict x,
                                                 const Scalar* __restrict scale,
                                                 const Scalar* __restrict shift, int64_t begin,
                                                 int64_t end, int64_t channels,
                                                 Storage* __restrict y) {
  using Values = RowValues<Storage>;
  for (int64_t r = begin; r < end; ++r) {
    const Storage* __restrict row = x + r * channels;
    Storage* __restrict out = y + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      out[c] = Values::round(relu(normalized(Values::load(row[c]), scale[c], shift[c])));
    }
  }
}

// grad_sum[c] += g, centred_sum[c] += g * (x[r][c] - mean[c]), g the
// gradient the ReLU passed.
template <typename Storage, typename Scalar = ComputeOf<Storage>>
DTRAIN_NORM_RELU_INLINE void add_masked_grad_rows(
    const Storage* __restrict x, const Storage* __restrict grad, const Scalar* __restrict scale,
    const Scalar* __restrict shift, const Scalar* __restrict mean, int64_t begin, int64_t end,
    int64_t channels, Scalar* __restrict grad_sum, Scalar* __restrict centred_sum) {
  using Values = RowValues<Storage>;
  for (int64_t r = begin; r < end; ++r) {
    const Storage* __restrict row = x + r * channels;
    const Storage* __restrict grad_row = grad + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const Scalar v = Values::load(row[c]);
      const Scalar g = passed_grad(v, Values::load(grad_row[c]), scale[c], shift[c]);
      grad_sum[c] += g;
      centred_sum[c] += g * (v - mean[c]);
    }
  }
}

// grad_input[r][c] = scale[c] * (g - grad_mean[c] - (x[r][c] - mean[c]) * centred_factor[c])
template <typename Storage, typename Scalar = ComputeOf<Storage>>
DTRAIN_NORM_RELU_INLINE void grad_input_rows(
    const Storage* __restrict x, const Storage* __restrict grad, const Scalar* __restrict scale,
    const Scalar* __restrict shift, const Scalar* __restrict mean,
    const Scalar* __restrict grad_mean, const Scalar* __restrict centred_factor, int64_t begin,
    int64_t end, int64_t channels, Storage* __restrict grad_input) {
  using Values = RowValues<Storage>;
  for (int64_t r = begin; r < end; ++r) {
    const Storage* __restrict row = x + r * channels;
    const Storage* __restrict grad_row = grad + r * channels;
    Storage* __restrict out = grad_input + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const Scalar v = Values::load(row[c]);
      const Scalar g = passed_grad(v, Values::load(grad_row[c]), scale[c], shift[c]);
      out[c] = Values::round(scale[c] * (g - grad_mean[c] - (v - mean[c]) * centred_factor[c]));
    }
  }
}

}  // namespace dtrain::kernels::detail

#undef DTRAIN_NORM_RELU_INLINE
