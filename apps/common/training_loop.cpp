#include "training_loop.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <fmt/format.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/train/progress_bar.h"

namespace dtrain::apps {

namespace {

double peak_device_mb(c10::Device device) {
  if (!device.is_cuda()) {
    return 0;
  }
  const auto stats = at::accelerator::getDeviceStats(device.index());
  const auto aggregate = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  return static_cast<double>(stats.allocated_bytes[aggregate].peak) / (1 << 20);
}

}  // namespace

amp::AutocastOptions LoopSettings::autocast() const {
  return amp::AutocastOptions(device.type())
      .enabled(bf16 || fp16)
      .dtype(fp16 ? at::kHalf : at::kBFloat16);
}

at::Generator augment_generator(const CommonTrainOptions& options, const Job& job, int epoch) {
  const uint64_t stream = (static_cast<uint64_t>(epoch) << 20) + static_cast<uint64_t>(job.rank);
  return at::detail::createCPUGenerator(options.seed * 0x9E3779B97F4A7C15ULL + stream);
}

std::unique_ptr<amp::GradScaler> make_loss_scaler(const CommonTrainOptions& options) {
  return options.amp == "fp16" ? std::make_unique<amp::GradScaler>() : nullptr;
}

LoopSettings loop_settings(const CommonTrainOptions& options, const Job& job, int64_t eval_batch,
                           amp::GradScaler* scaler) {
  return {.epochs = options.epochs,
          .batch_size = options.batch_size,
          .bf16 = options.amp == "bf16",
          .eval_batch = eval_batch,
          .device = job.device,
          .fp16 = options.amp == "fp16",
          .scaler = scaler};
}

EpochStats train_epoch(torch::nn::Module& module, torch::optim::Optimizer& optimizer,
                       data::DistributedSampler& sampler, const LoopSettings& settings, int epoch,
                       const Job& job, const BatchLoss& batch_loss) {
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
    optimizer.zero_grad();
    at::Tensor loss;
    {
      amp::AutocastGuard autocast(settings.autocast());
      loss = batch_loss(index);
    }
    if (settings.scaler != nullptr) {
      // A step whose gradients overflowed is skipped and the scale backs off.
      settings.scaler->scale(loss).backward();
      settings.scaler->step(optimizer);
      settings.scaler->update();
    } else {
      loss.backward();
      optimizer.step();
    }
    const double batch_loss_value = loss.item<double>();
    loss_sum += batch_loss_value * static_cast<double>(index.size(0));
    bar.advance(1, fmt::format("loss {:.4f}", batch_loss_value));
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
          .rank_samples_per_s_max = *std::max_element(rates.begin(), rates.end()),
          .peak_device_mb = peak_device_mb(settings.device)};
}

int64_t parameter_count(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const at::Tensor& parameter : module.parameters()) {
    count += parameter.numel();
  }
  return count;
}

}  // namespace dtrain::apps
