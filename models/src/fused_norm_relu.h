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

}  // namespace dtrain::models::detail
