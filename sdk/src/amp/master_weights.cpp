#include "dtrain/amp/master_weights.h"

#include <ATen/ATen.h>

#include <utility>

#include "dtrain/util/errors.h"

namespace dtrain::amp {

MasterWeights::MasterWeights(std::vector<at::Tensor> model_parameters)
    : model_(std::move(model_parameters)) {
  at::NoGradGuard no_grad;
  master_.reserve(model_.size());
  for (std::size_t i = 0; i < model_.size(); ++i) {
    const at::Tensor& p = model_[i];
    DTRAIN_CHECK(p.defined() && at::isFloatingType(p.scalar_type()),
                 "MasterWeights: model parameter ", i, " must be a floating tensor, got ",
                 p.defined() ? c10::toString(p.scalar_type()) : "an undefined tensor");
    master_.push_back(
        p.detach().to(at::kFloat, /*non_blocking=*/false, /*copy=*/true).set_requires_grad(true));
  }
}

void MasterWeights::copy_grads_to_master() {
  at::NoGradGuard no_grad;
  for (std::size_t i = 0; i < model_.size(); ++i) {
    const at::Tensor& grad = model_[i].grad();
    if (!grad.defined()) {
      master_[i].mutable_grad() = at::Tensor();
      continue;
    }
    at::Tensor& master_grad = master_[i].mutable_grad();
    if (master_grad.defined()) {
      master_grad.copy_(grad);  // converts; inf/NaN survive for the scaler to see
    } else {
      master_grad = grad.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true);
    }
  }
}

void MasterWeights::copy_master_to_model() {
  at::NoGradGuard no_grad;
  for (std::size_t i = 0; i < model_.size(); ++i) {
    model_[i].copy_(master_[i]);
  }
}

void MasterWeights::zero_grad() {
  for (auto* list : {&model_, &master_}) {
    for (auto& p : *list) {
      p.mutable_grad() = at::Tensor();
    }
  }
}

}  // namespace dtrain::amp
