// Metric kernels that run where the tensors live (CPU or CUDA), so that
// evaluating on a GPU needs no copy of the logits to the host.
#pragma once

#include <ATen/core/Tensor.h>

namespace dtrain::kernels {

// Number of rows of `logits` whose argmax equals the label.
//
//   logits: (B, C) float32, float64, float16 or bfloat16, C >= 1
//   labels: (B,) int64 on the same device
//   returns a 0-dim int64 tensor on that device
//
// Ties go to the lowest index and NaN counts as the largest value, as in
// torch.argmax, so CPU and CUDA agree exactly. Throws c10::Error naming the
// argument when shapes, dtypes or devices are wrong.
at::Tensor count_correct(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace dtrain::kernels
