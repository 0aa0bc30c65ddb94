// Whether a step's gradients are usable: a training loop without a loss
// scaler calls it between backward and the optimizer's step, so a diverged
// run stops with an error instead of writing NaN into every parameter and
// training on for hours.
#pragma once

#include <torch/optim/optimizer.h>

namespace dtrain::train {

// True when no gradient of `optimizer`'s parameters holds a NaN or an
// infinity (parameters without a gradient are skipped). One reduction per
// gradient and one host sync per device. After DDP's all-reduce every rank
// holds the same gradients, so every rank gets the same answer without a
// collective of its own.
bool gradients_are_finite(const torch::optim::Optimizer& optimizer);

}  // namespace dtrain::train
