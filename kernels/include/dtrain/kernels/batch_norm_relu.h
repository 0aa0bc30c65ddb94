// Batch norm in training mode followed by ReLU, fused into one op for CPU
// activations whose channels are innermost in memory (channels-last 4-d
// tensors, contiguous 2-d ones). PointNet++'s shared MLPs repeat conv ->
// batch norm -> ReLU on such tensors (the set abstraction runs
// channels-last), and there LibTorch's batch norm and ReLU take nearly half
// of a CPU training step, most of it passes over memory: the fused op makes
// three passes forward (mean, variance, normalise + ReLU) and two backward
// (sums, input gradient) where the pair makes four and three.
//
// Contract:
//  - input (N, C, ...) float32, float64 or bfloat16 on the CPU, with the
//    channels innermost: input.movedim(1, -1) contiguous (a channels-last
//    (N, C, H, W) tensor, a contiguous (N, C), or the transpose of a
//    contiguous (N, L, C)); at least 2 values per channel. weight and bias:
//    (C,) of input's dtype, or for bfloat16 input float32 or bfloat16.
//  - bfloat16 input (what a CPU bf16 autocast convolution gives, beside
//    the module's float32 parameters) is computed in float32, statistics
//    and sums included, and the output and input gradient are rounded to
//    bfloat16, as LibTorch's mixed-type batch norm does. The weight and
//    bias gradients come in the parameters' own dtype.
//  - Returns relu(batch_norm(input)) with the batch's statistics (biased
//    variance), in input's layout: the values of at::batch_norm(training) +
//    at::relu up to float rounding. Differentiable in input, weight and bias
//    (once); the backward recomputes the ReLU's mask from the input rather
//    than keeping the output.
//  - running_mean and running_var (C,), when defined, are updated in place
//    as torch's BatchNorm does: x <- (1 - momentum) x + momentum * stat, with
//    the unbiased variance.
//  - The batch sums are made in a fixed order: the results do not depend on
//    the thread count.
//  - Anything else (CUDA, float16, other layouts) throws c10::Error
//    naming the argument; batch_norm_relu_supports() tells beforehand.
//  - Registered as torch.ops.dtrain.batch_norm_relu (running statistics
//    may be None there).
//
// Example (what the PointNet++ set abstraction does for each BatchNorm2d +
// ReLU of its shared MLP):
//   auto y = dtrain::kernels::batch_norm_relu(x, bn->weight, bn->bias,
//                                             bn->running_mean, bn->running_var, 0.1, 1e-5);
#pragma once

#include <ATen/core/Tensor.h>

namespace dtrain::kernels {

// Whether batch_norm_relu() takes `input`: a CPU float32, float64 or bfloat16 tensor
// of at least 2 dimensions with the channels (dim 1) innermost in memory
// and more than one value per channel (the checks the op itself makes).
bool batch_norm_relu_supports(const at::Tensor& input);

at::Tensor batch_norm_relu(const at::Tensor& input, const at::Tensor& weight,
                           const at::Tensor& bias, const at::Tensor& running_mean,
                           const at::Tensor& running_var, double momentum, double eps);

}  // namespace dtrain::kernels
