#include "classification_loop.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/kernels/metrics.h"

namespace dtrain::apps {

namespace F = torch::nn::functional;
using amp::AutocastGuard;

LabeledTensors LabeledTensors::first(int64_t limit) const {
  if (limit <= 0 || limit >= size()) {
    return *this;
  }
  return {inputs.narrow(0, 0, limit), labels.narrow(0, 0, limit)};
}

TrainBatches classification_batches(const Forward& forward, const LabeledTensors& train,
                                    const Augment& augment) {
  return {
      .make =
          [&train, augment](const at::Tensor& index, at::Generator& generator) {
            at::Tensor inputs = train.inputs.index_select(0, index);
            if (augment) {
              inputs = augment(inputs, generator);
            }
            return Batch{inputs, train.labels.index_select(0, index)};
          },
      .loss =
          [forward](const Batch& batch) { return F::cross_entropy(forward(batch[0]), batch[1]); }};
}

EvalStats evaluate(const Forward& forward, torch::nn::Module& module, const LabeledTensors& test,
                   const LoopSettings& settings, const Job& job) {
  module.eval();
  torch::NoGradGuard no_grad;
  AutocastGuard autocast(settings.autocast());
  const int64_t first = test.size() * job.rank / job.world;
  const int64_t last = test.size() * (job.rank + 1) / job.world;
  double loss_sum = 0;
  double correct = 0;
  for (int64_t begin = first; begin < last; begin += settings.eval_batch) {
    const int64_t count = std::min(settings.eval_batch, last - begin);
    const at::Tensor logits = forward(test.inputs.narrow(0, begin, count).to(settings.device));
    const at::Tensor labels = test.labels.narrow(0, begin, count).to(settings.device);
    loss_sum +=
        F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum))
            .item<double>();
    correct += static_cast<double>(kernels::count_correct(logits, labels).item<int64_t>());
  }
  const auto totals = job.sum({loss_sum, correct});
  const auto n = static_cast<double>(test.size());
  return {totals[0] / n, totals[1] / n};
}

}  // namespace dtrain::apps
