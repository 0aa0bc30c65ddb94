// Classification in the training apps: inputs of any shape (images, point
// clouds) with one class label each, held in memory, trained with
// cross-entropy and scored by the share of right predictions.
#pragma once

#include <cstdint>
#include <functional>

#include <ATen/core/Tensor.h>
#include <torch/nn/functional/loss.h>

#include "dtrain/train/dataset.h"
#include "dtrain/train/evaluation.h"
#include "dtrain/train/trainer.h"

namespace dtrain::apps {

// Inputs with one class label each.
struct LabeledTensors {
  at::Tensor inputs;  // (N, ...)
  at::Tensor labels;  // (N,) int64
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
  // The first `limit` samples (all when limit is 0 or larger than the set).
  LabeledTensors first(int64_t limit) const;
};

// The model's forward in evaluation.
using Forward = std::function<at::Tensor(const at::Tensor&)>;

// Over this rank's slice of `test` (EvalContext::for_each_batch): the
// mean cross-entropy and the share of right predictions of the whole set.
train::EvalStats evaluate_classifier(const Forward& forward, const LabeledTensors& test,
                                     const train::EvalContext& context);

// The training step of a classifier: batches {inputs, labels} and their
// mean cross-entropy, against targets smoothed by `label_smoothing` (0:
// the labels alone; torch's CrossEntropyLoss(label_smoothing=...)).
template <typename ModuleHolder>
train::Step<ModuleHolder> classification_step(double label_smoothing = 0) {
  const auto loss =
      torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(label_smoothing);
  return [loss](train::JobModel<ModuleHolder>& model, const train::Batch& batch) {
    return torch::nn::functional::cross_entropy(model.train(batch[0]), batch[1], loss);
  };
}

// Evaluation on `test`, which must outlive the run.
template <typename ModuleHolder>
train::Evaluate<ModuleHolder> classification_evaluation(const LabeledTensors& test) {
  return [&test](train::JobModel<ModuleHolder>& model, const train::EvalContext& context) {
    return evaluate_classifier([&model](const at::Tensor& x) { return model.eval(x); }, test,
                               context);
  };
}

}  // namespace dtrain::apps
