#include "classification_loop.h"

#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/functional/loss.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/kernels/metrics.h"
#include "dtrain/train/progress_bar.h"

namespace dtrain::apps {

namespace F = torch::nn::functional;
using amp::AutocastGuard;
using amp::AutocastOptions;

LabeledTensors LabeledTensors::first(int64_t limit) const {
  if (limit <= 0 || limit >= size()) {
    return *this;
  }
  return {inputs.narrow(0, 0, limit), labels.narrow(0, 0, limit)};
}

int64_t parameter_count(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const at::Tensor& parameter : module.parameters()) {
    count += parameter.numel();
  }
  return count;
}

EpochStats train_epoch(const Forward& forward, torch::nn::Module& module,
                       torch::optim::Optimizer& optimizer, const LabeledTensors& train,
                       data::DistributedSampler& sampler, const LoopSettings& settings, int epoch,
                       const Job& job, const Augment& augment) {
  module.train();
  const auto start = std::chrono::steady_clock::now();
  sampler.set_epoch(epoch - 1);
  const at::Tensor order = at::tensor(sampler.indices(), at::kLong);
  // A last batch of one sample is left out: batch norm cannot train on a
  // single sample (LibTorch raises). Every rank has the same number of
  // samples, so every rank leaves it out and the ranks stay in step.
  const int64_t n = order.numel() > 1 && order.numel() % settings.batch_size == 1
                        ? order.numel() - 1
                        : order.numel();
  const int64_t batches = (n + settings.batch_size - 1) / settings.batch_size;
  train::ProgressBar bar(fmt::format("epoch {}/{}", epoch, settings.epochs), batches,
                         /*enabled=*/job.rank == 0);
  double loss_sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t begin = b * settings.batch_size;
    const at::Tensor index = order.narrow(0, begin, std::min(settings.batch_size, n - begin));
    at::Tensor inputs = train.inputs.index_select(0, index);
    if (augment) {
      inputs = augment(inputs);
    }
    const at::Tensor labels = train.labels.index_select(0, index);
    optimizer.zero_grad();
    at::Tensor loss;
    {
      AutocastGuard autocast(AutocastOptions(at::kCPU).enabled(settings.bf16));
      loss = F::cross_entropy(forward(inputs), labels);
    }
    loss.backward();
    optimizer.step();
    const double batch_loss = loss.item<double>();
    loss_sum += batch_loss * static_cast<double>(index.size(0));
    bar.advance(1, fmt::format("loss {:.4f}", batch_loss));
  }
  bar.finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto totals = job.sum({loss_sum, static_cast<double>(n)});
  const std::vector<double> rates = job.each(static_cast<double>(n) / seconds);
  return {.mean_loss = totals[0] / totals[1],
          .samples = static_cast<int64_t>(totals[1]),
          .seconds = seconds,
          .step_ms = batches > 0 ? 1000 * seconds / static_cast<double>(batches) : 0,
          .rank_samples_per_s_min = *std::min_element(rates.begin(), rates.end()),
          .rank_samples_per_s_max = *std::max_element(rates.begin(), rates.end())};
}

EvalStats evaluate(const Forward& forward, torch::nn::Module& module, const LabeledTensors& test,
                   const LoopSettings& settings, const Job& job) {
  module.eval();
  torch::NoGradGuard no_grad;
  AutocastGuard autocast(AutocastOptions(at::kCPU).enabled(settings.bf16));
  const int64_t first = test.size() * job.rank / job.world;
  const int64_t last = test.size() * (job.rank + 1) / job.world;
  double loss_sum = 0;
  double correct = 0;
  for (int64_t begin = first; begin < last; begin += settings.eval_batch) {
    const int64_t count = std::min(settings.eval_batch, last - begin);
    const at::Tensor logits = forward(test.inputs.narrow(0, begin, count));
    const at::Tensor labels = test.labels.narrow(0, begin, count);
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
