// Internal: the per-device implementations behind the public kernel API.
// Inputs reaching these have been validated by the public function.
#pragma once

#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>

#include <tuple>

#include "dtrain/kernels/pointnet2.h"

namespace dtrain::kernels::detail {

at::Tensor count_correct_cpu(const at::Tensor& logits, const at::Tensor& labels);
// Defined in src/cuda/ when built with CUDA, else raises (src/no_cuda.cpp).
at::Tensor count_correct_cuda(const at::Tensor& logits, const at::Tensor& labels);

// PointNet++ point ops. Inputs are validated and contiguous; coordinates are
// float32; index tensors are int64 and flattened to (B, L).
//
// Note [scatter layout]: scatter_add_points adds weight[b][l] *
// grad_out[b][c][l / group] into out[b][c][idx[b][l]], where
// group = L / grad_out.size(2) (1 for gather/group, 3 for interpolation) and
// an undefined `weight` means 1. Every implementation sums the terms of one
// output element in increasing l (kDeterministic), or in any order (kAtomic).
//
// Note [Interpolation weights in the accumulation type]
// Interpolation weights (scatter_add_points' `weight`, three_interpolate's)
// reach the kernels in the features' accumulation type, weight_dtype():
// float32 for float32, float16 and bfloat16 features, float64 for float64.
// Under mixed precision the features are float16 or bfloat16 while the
// weights come from three_nn's float32 distances; rounding them to the
// features' 8 or 11 bits first would add an error as large as the output's
// own rounding (bfloat16: up to 2^-9 of each term), for nothing, since the
// sums are float32 anyway. The weight gradient comes back in that type too.
inline at::ScalarType weight_dtype(const at::Tensor& features) {
  return at::toOpMathType(features.scalar_type());
}

// CPU (src/cpu/).
at::Tensor furthest_point_sample_cpu(const at::Tensor& xyz, int64_t npoint, int64_t start,
                                     CpuFpsPath path);
// Returns (idx, count).
std::tuple<at::Tensor, at::Tensor> ball_query_cpu(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                                  float radius2, int64_t nsample);
// Returns (idx, dist2).
std::tuple<at::Tensor, at::Tensor> knn_cpu(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                           int64_t k);
// Returns (dist2, idx).
std::tuple<at::Tensor, at::Tensor> three_nn_cpu(const at::Tensor& unknown, const at::Tensor& known);
// (B, C, N), (B, L) -> (B, C, L).
at::Tensor gather_points_cpu(const at::Tensor& features, const at::Tensor& idx);
// See Note [scatter layout]; `weight`, when defined, has weight_dtype(grad_out).
// Returns (B, C, n) in grad_out's dtype.
at::Tensor scatter_add_points_cpu(const at::Tensor& grad_out, const at::Tensor& idx,
                                  const at::Tensor& weight, int64_t n, ScatterMode mode);
// Note [point-major features]: a (B, C, N) features tensor whose channels
// are innermost in memory (the transpose of a contiguous (B, N, C) tensor,
// such as channels-last activations reduced over their neighbours) is
// gathered on the CPU as whole rows of channels, and the result keeps that
// layout: group_points gives a channels-last (B, C, M, K) tensor, the one a
// following 1x1 convolution runs fastest on. The values are the same as
// through the channel-major path; only the strides differ.
//
// rows (B, N, C) contiguous, idx (B, L) -> (B, L, C) contiguous.
at::Tensor gather_rows_cpu(const at::Tensor& rows, const at::Tensor& idx);
// grad_rows (B, L, C) with channels contiguous (any row and batch strides),
// idx (B, L) -> (B, n, C) contiguous: grad[b][idx[b][l]][c] += grad_rows[b][l][c],
// each sum in increasing l.
at::Tensor scatter_add_rows_cpu(const at::Tensor& grad_rows, const at::Tensor& idx, int64_t n);
// (B, C, m), idx (B, 3n), weight (B, 3n) in weight_dtype(features) -> (B, C, n).
at::Tensor three_interpolate_cpu(const at::Tensor& features, const at::Tensor& idx,
                                 const at::Tensor& weight);
// grad_out (B, C, n), features (B, C, m), idx (B, 3n) -> (B, 3n) in
// weight_dtype(features).
at::Tensor three_interpolate_weight_grad_cpu(const at::Tensor& grad_out, const at::Tensor& features,
                                             const at::Tensor& idx);

// CUDA (src/cuda/pointnet2_host.cpp; src/no_cuda.cpp raises without CUDA).
at::Tensor furthest_point_sample_cuda(const at::Tensor& xyz, int64_t npoint, int64_t start,
                                      FpsKernel kernel);
// Returns (idx, count).
std::tuple<at::Tensor, at::Tensor> ball_query_cuda(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                                   float radius2, int64_t nsample);
// Returns (idx, dist2).
std::tuple<at::Tensor, at::Tensor> knn_cuda(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                            int64_t k);
// Returns (dist2, idx).
std::tuple<at::Tensor, at::Tensor> three_nn_cuda(const at::Tensor& unknown,
                                                 const at::Tensor& known);
// (B, C, N), (B, L) -> (B, C, L).
at::Tensor gather_points_cuda(const at::Tensor& features, const at::Tensor& idx);
// See Note [scatter layout]; returns (B, C, n) in grad_out's dtype.
at::Tensor scatter_add_points_cuda(const at::Tensor& grad_out, const at::Tensor& idx,
                                   const at::Tensor& weight, int64_t n, ScatterMode mode);
// As the CPU functions above.
at::Tensor three_interpolate_cuda(const at::Tensor& features, const at::Tensor& idx,
                                  const at::Tensor& weight);
at::Tensor three_interpolate_weight_grad_cuda(const at::Tensor& grad_out,
                                              const at::Tensor& features, const at::Tensor& idx);

// Fused batch norm + ReLU over rows (R, C) contiguous, float32, float64 or
// bfloat16 (src/cpu/batch_norm_relu.cpp; Note [fused batch norm ReLU]).
// weight and bias are of the type the rows compute in (float32 for
// bfloat16); so are the statistics and the weight and bias gradients, while
// output and grad_input are of the rows' type.
struct NormReluForward {
  at::Tensor output;        // (R, C)
  at::Tensor mean;          // (C,)
  at::Tensor invstd;        // (C,): 1 / sqrt(biased variance + eps)
  at::Tensor variance_sum;  // (C,): sum of squared deviations, for the running variance
};
struct NormReluBackward {
  at::Tensor grad_input;  // (R, C)
  at::Tensor grad_weight;
  at::Tensor grad_bias;
};
NormReluForward batch_norm_relu_forward_cpu(const at::Tensor& rows, const at::Tensor& weight,
                                            const at::Tensor& bias, double eps);
NormReluBackward batch_norm_relu_backward_cpu(const at::Tensor& grad_rows, const at::Tensor& rows,
                                              const at::Tensor& weight, const at::Tensor& bias,
                                              const at::Tensor& mean, const at::Tensor& invstd);

// neighbour_max over rows (B, M, K, C) contiguous, float32, float64 or bfloat16
// (src/cpu/neighbour_max.cpp): values (B, M, C) and the winning neighbour
// of each (int32).
struct NeighbourMax {
  at::Tensor values;
  at::Tensor argmax;
};
NeighbourMax neighbour_max_cpu(const at::Tensor& rows);
// grad (B, M, C) contiguous, argmax (B, M, C) -> (B, M, K, C) contiguous.
at::Tensor neighbour_max_backward_cpu(const at::Tensor& grad, const at::Tensor& argmax,
                                      int64_t neighbours);

}  // namespace dtrain::kernels::detail
