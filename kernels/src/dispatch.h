// Internal: the per-device implementations behind the public kernel API.
// Inputs reaching these have been validated by the public function.
#pragma once

#include <ATen/core/Tensor.h>

namespace dtrain::kernels::detail {

at::Tensor count_correct_cpu(const at::Tensor& logits, const at::Tensor& labels);
// Defined in src/cuda/ when built with CUDA, else raises (src/no_cuda.cpp).
at::Tensor count_correct_cuda(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace dtrain::kernels::detail
