// Clipping by global norm, as torch.nn.utils.clip_grad_norm_: when the L2
// norm of all of an optimizer's gradients together exceeds `max_norm`, every
// gradient is scaled by max_norm / norm; below it they are left exactly as
// they were. With a loss scaler, clip after its unscale_ (the Trainer does).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

namespace dtrain::train {

// Returns the norm before clipping, where the gradients are (no host read:
// a GPU step runs on without waiting). Parameters without a gradient are
// skipped; without any gradient the norm is 0. Throws dtrain::Error unless
// max_norm > 0.
at::Tensor clip_gradient_norm(torch::optim::Optimizer& optimizer, double max_norm);

}  // namespace dtrain::train
