// Internal: runs a stack built by append_norm_relu_layers (layer -> batch
// norm -> ReLU [-> dropout], ...) with each batch norm + ReLU pair that
// dtrain::kernels::batch_norm_relu takes run as that one fused op (Note
// [fused batch norm ReLU] in the kernels): a CPU float tensor (bfloat16
// under autocast included) with its channels innermost, a torch
// BatchNorm1d/2d with weights normalising with the batch's statistics
// (training, or no running statistics). Every other module, and every pair
// that does not qualify (CUDA, float16, channel-major tensors, eval mode, a
// SyncBatchNorm put in by ddp::convert_sync_batchnorm), runs as the stack's
// own forward would. Parameters, buffers and the running statistics'
// updates are those of the modules, so checkpoints do not change.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/modules/container/sequential.h>

namespace dtrain::models::detail {

at::Tensor forward_fusing_norm_relu(torch::nn::Sequential& stack, at::Tensor x);

// The same stack of 1x1 Conv1d layers (shared_mlp_1d, the part segmentation
// head) run on rows: `rows` is (R, C), one point's channels per row, and
// each 1x1 convolution is the matrix product it amounts to (at::linear with
// the layer's weight and bias), each batch norm a BatchNorm1d over the rows.
// Returns (R, C_out). With `fuse`, batch norm + ReLU pairs run fused as
// above. Any other convolution (kernel, stride, padding, dilation or groups
// other than 1x1) throws: it is no product over rows.
at::Tensor forward_on_rows(torch::nn::Sequential& stack, at::Tensor rows, bool fuse);

// forward_on_rows over clouds: `points` is (B, N, C), one point's channels
// per row (copied into contiguous rows where its strides need it). Returns
// the (B, C_out, N) view of the (B, N, C_out) rows the stack gives: the
// channel-major shape, channels innermost in memory.
at::Tensor forward_points_on_rows(torch::nn::Sequential& stack, const at::Tensor& points,
                                  bool fuse);

}  // namespace dtrain::models::detail
