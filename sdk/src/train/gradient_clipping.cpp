#include "dtrain/train/gradient_clipping.h"

#include <vector>

#include <ATen/ATen.h>

#include "dtrain/util/errors.h"

namespace dtrain::train {

at::Tensor clip_gradient_norm(torch::optim::Optimizer& optimizer, double max_norm) {
  DTRAIN_CHECK(max_norm > 0, "clip_gradient_norm: max_norm must be positive, got ", max_norm);
  std::vector<at::Tensor> gradients;
  for (const auto& group : optimizer.param_groups()) {
    for (const at::Tensor& parameter : group.params()) {
      if (parameter.grad().defined()) {
        gradients.push_back(parameter.grad());
      }
    }
  }
  if (gradients.empty()) {
    return at::zeros({}, at::kFloat);
  }
  const at::Tensor norm = at::linalg_vector_norm(at::stack(at::_foreach_norm(gradients, 2)), 2);
  // Multiplied by at most 1, computed on the device: a gradient below the
  // threshold is multiplied by exactly 1 and so left bit for bit.
  const at::Tensor factor = at::clamp_max(max_norm / (norm + 1e-6), 1.0);
  at::_foreach_mul_(gradients, factor);
  return norm;
}

}  // namespace dtrain::train
