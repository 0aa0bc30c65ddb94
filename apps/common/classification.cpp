#include "classification.h"

#include <ATen/ATen.h>

#include "dtrain/kernels/metrics.h"

namespace dtrain::apps {

namespace F = torch::nn::functional;

LabeledTensors LabeledTensors::first(int64_t limit) const {
  if (limit <= 0 || limit >= size()) {
    return *this;
  }
  return {inputs.narrow(0, 0, limit), labels.narrow(0, 0, limit)};
}

train::EvalStats evaluate_classifier(const Forward& forward, const LabeledTensors& test,
                                     const train::EvalContext& context) {
  double loss_sum = 0;
  double correct = 0;
  context.for_each_batch(test.size(), [&](int64_t begin, int64_t count) {
    const at::Tensor logits = forward(test.inputs.narrow(0, begin, count).to(context.device()));
    const at::Tensor labels = test.labels.narrow(0, begin, count).to(context.device());
    loss_sum +=
        F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum))
            .item<double>();
    correct += static_cast<double>(kernels::count_correct(logits, labels).item<int64_t>());
  });
  const auto totals = context.job().sum({loss_sum, correct});
  const auto n = static_cast<double>(test.size());
  return {totals[0] / n, totals[1] / n};
}

}  // namespace dtrain::apps
