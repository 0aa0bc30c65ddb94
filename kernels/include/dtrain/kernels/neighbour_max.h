// The max-pool of PointNet++'s set abstraction for CPU channels-last
// groups: each channel's maximum over every centre's neighbours, in one
// vectorised pass, with a backward that writes the gradient's rows in one
// pass too. LibTorch's max over a dimension of the (B, M, K, C) view walks
// each maximum one element at a time, and its backward fills a zero tensor
// and scatters into it.
//
// Contract:
//  - grouped (B, C, M, K) float32, float64 or bfloat16 (what a CPU bf16
//    autocast convolution gives) on the CPU, channels-last
//    (grouped.permute({0, 2, 3, 1}) contiguous), K >= 1.
//  - Returns (B, C, M) with the channels innermost (the transpose of a
//    contiguous (B, M, C)): the values of std::get<0>(grouped.max(3)), bit
//    for bit. Ties go to the lowest neighbour and the first NaN wins, as in
//    at::max(dim), so the gradient goes where LibTorch's would.
//  - Differentiable once in grouped.
//  - Anything else throws c10::Error naming the argument;
//    neighbour_max_supports() tells beforehand.
//
//   at::Tensor pooled = dtrain::kernels::neighbour_max(mlp_output);  // (B, C, M)
#pragma once

#include <ATen/core/Tensor.h>

namespace dtrain::kernels {

// Whether neighbour_max() takes `grouped`.
bool neighbour_max_supports(const at::Tensor& grouped);

at::Tensor neighbour_max(const at::Tensor& grouped);

}  // namespace dtrain::kernels
