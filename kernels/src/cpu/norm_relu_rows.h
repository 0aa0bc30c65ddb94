// Internal: the per-row loops of the fused batch norm + ReLU
// (cpu/batch_norm_relu.cpp). Each runs over one row of `channels` values
// with the channels innermost, so it vectorises.
//
// The ReLU's mask is recomputed in the backward from the input, with
// normalized(), the very expression the forward used: the file compiles
// with -ffp-contract=off, so no multiply-add is fused in one loop and not in
// the other, and the mask is the forward's bit for bit.
#pragma once

#include <cstdint>

namespace dtrain::kernels::detail {

template <typename Scalar>
inline Scalar normalized(Scalar x, Scalar scale, Scalar shift) {
  return x * scale + shift;
}

// ReLU as torch computes it (clamp_min): NaN stays NaN.
template <typename Scalar>
inline Scalar relu(Scalar v) {
  return v < Scalar(0) ? Scalar(0) : v;
}

// Whether the ReLU let the gradient through: torch's threshold_backward
// passes it where the output is > 0 (NaN included), i.e. where !(v <= 0).
template <typename Scalar>
inline bool relu_passes(Scalar v) {
  return !(v <= Scalar(0));
}

// The gradient the ReLU passed back: grad where it passed, else 0 (even
// for an infinite or NaN grad). Both operands are plain values, so the
// compiler makes this a select rather than a branch, and the loops calling
// it vectorise.
template <typename Scalar>
inline Scalar passed_grad(Scalar x, Scalar grad, Scalar scale, Scalar shift) {
  return relu_passes(normalized(x, scale, shift)) ? grad : Scalar(0);
}

template <typename Scalar>
inline void add_row(const Scalar* __restrict x, int64_t channels, Scalar* __restrict acc) {
  for (int64_t c = 0; c < channels; ++c) {
    acc[c] += x[c];
  }
}

template <typename Scalar>
inline void add_squared_deviation_row(const Scalar* __restrict x, const Scalar* __restrict mean,
                                      int64_t channels, Scalar* __restrict acc) {
  for (int64_t c = 0; c < channels; ++c) {
    const Scalar d = x[c] - mean[c];
    acc[c] += d * d;
  }
}

template <typename Scalar>
inline void normalize_relu_row(const Scalar* __restrict x, const Scalar* __restrict scale,
                               const Scalar* __restrict shift, int64_t channels,
                               Scalar* __restrict y) {
  for (int64_t c = 0; c < channels; ++c) {
    y[c] = relu(normalized(x[c], scale[c], shift[c]));
  }
}

// grad_sum += g, centred_sum += g * (x - mean), g the gradient the ReLU passed.
template <typename Scalar>
inline void add_masked_grad_row(const Scalar* __restrict x, const Scalar* __restrict grad,
                                const Scalar* __restrict scale, const Scalar* __restrict shift,
                                const Scalar* __restrict mean, int64_t channels,
                                Scalar* __restrict grad_sum, Scalar* __restrict centred_sum) {
  for (int64_t c = 0; c < channels; ++c) {
    const Scalar g = passed_grad(x[c], grad[c], scale[c], shift[c]);
    grad_sum[c] += g;
    centred_sum[c] += g * (x[c] - mean[c]);
  }
}

template <typename Scalar>
inline void grad_input_row(const Scalar* __restrict x, const Scalar* __restrict grad,
                           const Scalar* __restrict scale, const Scalar* __restrict shift,
                           const Scalar* __restrict mean, const Scalar* __restrict grad_mean,
                           const Scalar* __restrict centred_factor, int64_t channels,
                           Scalar* __restrict grad_input) {
  for (int64_t c = 0; c < channels; ++c) {
    const Scalar g = passed_grad(x[c], grad[c], scale[c], shift[c]);
    grad_input[c] = scale[c] * (g - grad_mean[c] - (x[c] - mean[c]) * centred_factor[c]);
  }
}

}  // namespace dtrain::kernels::detail
