#include "dtrain/train/optimizers.h"

#include <string>
#include <vector>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "dtrain/util/errors.h"

namespace dtrain::train {

const util::EnumWords<OptimizerKind>& optimizer_words() {
  static const util::EnumWords<OptimizerKind> words{{"adam", OptimizerKind::kAdam},
                                                    {"adamw", OptimizerKind::kAdamW},
                                                    {"sgd", OptimizerKind::kSgd}};
  return words;
}

namespace {

// Biases and the scales and shifts of norms: what weight decay would pull
// towards zero for no gain in generalisation (timm's rule: ndim <= 1).
bool is_norm_or_bias(const std::string& name, const at::Tensor& parameter) {
  return parameter.dim() <= 1 || name.ends_with("bias");
}

// The optimizer's options for a group that decays by `weight_decay`.
std::unique_ptr<torch::optim::OptimizerOptions> group_options(const OptimizerOptions& o, double lr,
                                                              double weight_decay) {
  switch (o.kind()) {
    case OptimizerKind::kAdam:
      return std::make_unique<torch::optim::AdamOptions>(
          torch::optim::AdamOptions(lr).weight_decay(weight_decay));
    case OptimizerKind::kAdamW:
      return std::make_unique<torch::optim::AdamWOptions>(
          torch::optim::AdamWOptions(lr).weight_decay(weight_decay));
    case OptimizerKind::kSgd:
      return std::make_unique<torch::optim::SGDOptions>(torch::optim::SGDOptions(lr)
                                                            .momentum(o.momentum())
                                                            .nesterov(o.nesterov())
                                                            .weight_decay(weight_decay));
  }
  throw Error("make_optimizer: unknown optimizer kind");
}

template <typename Optim, typename Options>
std::unique_ptr<torch::optim::Optimizer> build(
    std::vector<torch::optim::OptimizerParamGroup> groups,
    const torch::optim::OptimizerOptions& defaults) {
  return std::make_unique<Optim>(std::move(groups), static_cast<const Options&>(defaults));
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const torch::nn::Module& module, double lr,
                                                        const OptimizerOptions& o) {
  DTRAIN_CHECK(o.weight_decay() >= 0, "--weight-decay must be >= 0, got ", o.weight_decay());
  DTRAIN_CHECK(o.momentum() >= 0, "--momentum must be >= 0, got ", o.momentum());
  DTRAIN_CHECK(!o.nesterov() || (o.kind() == OptimizerKind::kSgd && o.momentum() > 0),
               "--nesterov needs --optimizer sgd with --momentum above 0");
  std::vector<at::Tensor> decayed, not_decayed;
  for (const auto& item : module.named_parameters()) {
    const bool exempt = !o.decay_norms_and_biases() && is_norm_or_bias(item.key(), item.value());
    (exempt ? not_decayed : decayed).push_back(item.value());
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decayed, group_options(o, lr, o.weight_decay()));
  if (!not_decayed.empty()) {
    groups.emplace_back(not_decayed, group_options(o, lr, 0.0));
  }
  const auto defaults = group_options(o, lr, o.weight_decay());
  switch (o.kind()) {
    case OptimizerKind::kAdam:
      return build<torch::optim::Adam, torch::optim::AdamOptions>(std::move(groups), *defaults);
    case OptimizerKind::kAdamW:
      return build<torch::optim::AdamW, torch::optim::AdamWOptions>(std::move(groups), *defaults);
    case OptimizerKind::kSgd:
      return build<torch::optim::SGD, torch::optim::SGDOptions>(std::move(groups), *defaults);
  }
  throw Error("make_optimizer: unknown optimizer kind");
}

}  // namespace dtrain::train
