// The optimizers of today's recipes, built from typed options: Adam, AdamW
// (PointNeXt's), and SGD with momentum or Nesterov, with the choice to
// leave norms and biases out of weight decay (their parameter group then
// decays by 0), as timm's param_groups_weight_decay does.
//
//   auto optimizer = make_optimizer(*model, 1e-3, OptimizerOptions()
//                                                      .kind(OptimizerKind::kAdamW)
//                                                      .weight_decay(0.05)
//                                                      .decay_norms_and_biases(false));
//
// The Trainer sets the learning rate of every group before each step, so
// `lr` is only the rate the optimizer is made with.
#pragma once

#include <memory>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "dtrain/util/enum_words.h"

namespace dtrain::train {

enum class OptimizerKind { kAdam, kAdamW, kSgd };
// "adam", "adamw", "sgd" (--optimizer).
const util::EnumWords<OptimizerKind>& optimizer_words();

struct OptimizerOptions {
  TORCH_ARG(OptimizerKind, kind) = OptimizerKind::kAdam;
  // L2 penalty (Adam, SGD) or decoupled decay (AdamW), as torch.optim's.
  TORCH_ARG(double, weight_decay) = 0;
  // SGD only: momentum, and Nesterov's form of it (needs momentum > 0).
  TORCH_ARG(double, momentum) = 0;
  TORCH_ARG(bool, nesterov) = false;
  // false: parameters of one dimension or fewer (biases, norms' scales and
  // shifts) and those named "bias" go in a group without weight decay.
  TORCH_ARG(bool, decay_norms_and_biases) = true;
};

// An optimizer over `module`'s parameters: one group, or two when norms
// and biases are left out of weight decay (the decayed first). Throws
// dtrain::Error for Nesterov without momentum, or negative values.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const torch::nn::Module& module, double lr,
                                                        const OptimizerOptions& options);

}  // namespace dtrain::train
