// Internal: the loops of the fused batch norm + ReLU (cpu/batch_norm_relu.cpp)
// over rows [begin, end) of `channels` values each, channels innermost, so
// that the inner loops run over contiguous memory and vectorise. Every
// loop is elementwise across channels: a channel's sum runs over its rows
// in order whatever the vector width, so the baseline and AVX2 builds of
// these loops give the same bits.
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

// acc[c] += x[r][c]
template <typename Scalar>
DTRAIN_NORM_RELU_INLINE void add_rows(const Scalar* __restrict x, int64_t begin, int64_t end,
                                      int64_t channels, Scalar* __restrict acc) {
  for (int64_t r = begin; r < end; ++r) {
    const Scalar* __restrict row = x + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      acc[c] += row[c];
    }
  }
}

// acc[c] += (x[r][c] - mean[c])^2
template <typename Scalar>
DTRAIN_NORM_RELU_INLINE void add_squared_deviation_rows(const Scalar* __restrict x,
                                                        const Scalar* __restrict mean,
                                                        int64_t begin, int64_t end,
                                                        int64_t channels, Scalar* __restrict acc) {
  for (int64_t r = begin; r < end; ++r) {
    const Scalar* __restrict row = x + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const Scalar d = row[c] - mean[c];
      acc[c] += d * d;
    }
  }
}

// y[r][c] = relu(x[r][c] * scale[c] + shift[c])
template <typename Scalar>
DTRAIN_NORM_RELU_INLINE void normalize_relu_rows(const Scalar* __restrict x,
                                                 const Scalar* __restrict scale,
                                                 const Scalar* __restrict shift, int64_t begin,
                                                 int64_t end, int64_t channels,
                                                 Scalar* __restrict y) {
  for (int64_t r = begin; r < end; ++r) {
    const Scalar* __restrict row = x + r * channels;
    Scalar* __restrict out = y + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      out[c] = relu(normalized(row[c], scale[c], shift[c]));
    }
  }
}

// grad_sum[c] += g, centred_sum[c] += g * (x[r][c] - mean[c]), g the
// gradient the ReLU passed.
template <typename Scalar>
DTRAIN_NORM_RELU_INLINE void add_masked_grad_rows(
    const Scalar* __restrict x, const Scalar* __restrict grad, const Scalar* __restrict scale,
    const Scalar* __restrict shift, const Scalar* __restrict mean, int64_t begin, int64_t end,
    int64_t channels, Scalar* __restrict grad_sum, Scalar* __restrict centred_sum) {
  for (int64_t r = begin; r < end; ++r) {
    const Scalar* __restrict row = x + r * channels;
    const Scalar* __restrict grad_row = grad + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const Scalar g = passed_grad(row[c], grad_row[c], scale[c], shift[c]);
      grad_sum[c] += g;
      centred_sum[c] += g * (row[c] - mean[c]);
    }
  }
}

// grad_input[r][c] = scale[c] * (g - grad_mean[c] - (x[r][c] - mean[c]) * centred_factor[c])
template <typename Scalar>
DTRAIN_NORM_RELU_INLINE void grad_input_rows(
    const Scalar* __restrict x, const Scalar* __restrict grad, const Scalar* __restrict scale,
    const Scalar* __restrict shift, const Scalar* __restrict mean,
    const Scalar* __restrict grad_mean, const Scalar* __restrict centred_factor, int64_t begin,
    int64_t end, int64_t channels, Scalar* __restrict grad_input) {
  for (int64_t r = begin; r < end; ++r) {
    const Scalar* __restrict row = x + r * channels;
    const Scalar* __restrict grad_row = grad + r * channels;
    Scalar* __restrict out = grad_input + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const Scalar g = passed_grad(row[c], grad_row[c], scale[c], shift[c]);
      out[c] = scale[c] * (g - grad_mean[c] - (row[c] - mean[c]) * centred_factor[c]);
    }
  }
}

}  // namespace dtrain::kernels::detail

#undef DTRAIN_NORM_RELU_INLINE
