// One epoch of mini-batch training and one pass of evaluation for a
// classifier, shared by the training apps: inputs of any shape (images,
// point clouds) indexed along their first dimension, cross-entropy loss,
// optional autocast, a progress bar on rank 0, and sums over
// every rank so each rank reports the whole job's numbers. The epoch is
// training_loop.h's with a classifier's loss.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "training_job.h"
#include "training_loop.h"

namespace dtrain::apps {

// Inputs with one class label each, held in memory.
struct LabeledTensors {
  at::Tensor inputs;  // (N, ...)
  at::Tensor labels;  // (N,) int64
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
  // The first `limit` samples (all when limit is 0 or larger than the set).
  LabeledTensors first(int64_t limit) const;
};

// The model's forward: the module itself, or DDP around it.
using Forward = std::function<at::Tensor(const at::Tensor&)>;
// Applied to each training batch's inputs (augmentation), drawing from the
// batch's generator; may be empty.
using Augment = std::function<at::Tensor(const at::Tensor& inputs, at::Generator& generator)>;

// Batches of `train` samples, {inputs, labels}, inputs augmented on the CPU
// when `augment` is set, and their mean cross-entropy.
TrainBatches classification_batches(const Forward& forward, const LabeledTensors& train,
                                    const Augment& augment);

// Rank r evaluates the r-th of `world` contiguous slices of `test` with the
// module in evaluation mode; the sums are combined, so every rank gets the
// whole set's numbers.
EvalStats evaluate(const Forward& forward, torch::nn::Module& module, const LabeledTensors& test,
                   const LoopSettings& settings, const Job& job);

}  // namespace dtrain::apps
