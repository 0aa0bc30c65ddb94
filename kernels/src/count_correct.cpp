#include <c10/util/Exception.h>

#include "dispatch.h"
#include "dtrain/kernels/metrics.h"

namespace dtrain::kernels {

at::Tensor count_correct(const at::Tensor& logits, const at::Tensor& labels) {
  TORCH_CHECK(logits.dim() == 2, "count_correct: logits must be 2-D (B, C), got shape ",
              logits.sizes());
  TORCH_CHECK(logits.size(1) >= 1, "count_correct: logits need at least one class, got shape ",
              logits.sizes());
  TORCH_CHECK(at::isFloatingType(logits.scalar_type()),
              "count_correct: logits must be float32, float64, float16 or bfloat16, got ",
              logits.scalar_type());
  TORCH_CHECK(labels.dim() == 1 && labels.size(0) == logits.size(0),
              "count_correct: labels must have shape (", logits.size(0), ",) to match logits ",
              logits.sizes(), ", got ", labels.sizes());
  TORCH_CHECK(labels.scalar_type() == at::kLong, "count_correct: labels must be int64, got ",
              labels.scalar_type());
  TORCH_CHECK(labels.device() == logits.device(), "count_correct: labels are on ", labels.device(),
              " but logits are on ", logits.device());
  const at::Tensor dense_logits = logits.contiguous();
  const at::Tensor dense_labels = labels.contiguous();
  if (logits.is_cuda()) {
    return detail::count_correct_cuda(dense_logits, dense_labels);
  }
  TORCH_CHECK(logits.is_cpu(), "count_correct: unsupported device ", logits.device());
  return detail::count_correct_cpu(dense_logits, dense_labels);
}

}  // namespace dtrain::kernels
