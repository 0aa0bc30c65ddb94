#include "dtrain/train/finite_gradients.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <vector>

namespace dtrain::train {

bool gradients_are_finite(const torch::optim::Optimizer& optimizer) {
  at::NoGradGuard no_grad;
  // Each gradient's sum, per device: a sum is NaN or infinite when any of
  // its elements is (inf - inf is NaN). Finite gradients whose sum
  // overflows would need values near 1e38, where a run has diverged
  // anyway. Summed in float32 (double for double gradients), so fp16
  // gradients cannot overflow their own range.
  std::vector<std::pair<c10::Device, std::vector<at::Tensor>>> sums;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& param : group.params()) {
      const at::Tensor& grad = param.grad();
      if (!grad.defined()) {
        continue;
      }
      const at::ScalarType accumulate =
          grad.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
      const at::Tensor sum = grad.sum(accumulate).to(at::kDouble);
      auto on = std::find_if(sums.begin(), sums.end(),
                             [&](const auto& entry) { return entry.first == grad.device(); });
      if (on == sums.end()) {
        sums.push_back({grad.device(), {}});
        on = std::prev(sums.end());
      }
      on->second.push_back(sum);
    }
  }
  for (const auto& [device, device_sums] : sums) {
    if (!at::stack(device_sums).sum().isfinite().item<bool>()) {
      return false;
    }
  }
  return true;
}

}  // namespace dtrain::train
