#include "training_loop.h"

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <fmt/format.h>
#include <torch/utils.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/data/prefetch_loader.h"
#include "dtrain/train/progress_bar.h"

namespace dtrain::apps {

namespace {

void reset_peak_device_memory(c10::Device device) {
  if (device.is_cuda()) {
    at::accelerator::resetPeakStats(device.index());
  }
}

double peak_device_mb(c10::Device device) {
  if (!device.is_cuda()) {
    return 0;
  }
  const auto stats = at::accelerator::getDeviceStats(device.index());
  const auto aggregate = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  return static_cast<double>(stats.allocated_bytes[aggregate].peak) / (1 << 20);
}

// splitmix64's finaliser: nearby inputs (epochs, ranks, batches) give
// unrelated seeds.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A seed for one stream of draws: --seed, what the stream is for, and the
// numbers that set it apart (epoch, rank, batch), mixed in turn.
uint64_t stream_seed(uint64_t seed, std::initializer_list<uint64_t> parts) {
  uint64_t state = mix(seed);
  for (const uint64_t part : parts) {
    state = mix(state ^ part);
  }
  return state;
}

constexpr uint64_t kAugmentationStream = 1;
constexpr uint64_t kDropoutStream = 2;

}  // namespace

amp::AutocastOptions LoopSettings::autocast() const {
  return amp::AutocastOptions(device.type())
      .enabled(bf16 || fp16)
      .dtype(fp16 ? at::kHalf : at::kBFloat16);
}

at::Generator batch_generator(uint64_t seed, int epoch, int rank, int64_t batch) {
  return at::detail::createCPUGenerator(
      stream_seed(seed, {kAugmentationStream, static_cast<uint64_t>(epoch),
                         static_cast<uint64_t>(rank), static_cast<uint64_t>(batch)}));
}

void seed_epoch_draws(uint64_t seed, int epoch, int rank) {
  torch::manual_seed(stream_seed(
      seed, {kDropoutStream, static_cast<uint64_t>(epoch), static_cast<uint64_t>(rank)}));
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
          .scaler = scaler,
          .seed = options.seed,
          .loader_workers = options.loader_workers};
}

EpochStats train_epoch(torch::nn::Module& module, torch::optim::Optimizer& optimizer,
                       data::DistributedSampler& sampler, const LoopSettings& settings, int epoch,
                       const Job& job, const TrainBatches& batches) {
  module.train();
  seed_epoch_draws(settings.seed, epoch, job.rank);
  reset_peak_device_memory(settings.device);
  const auto start = std::chrono::steady_clock::now();
  sampler.set_epoch(epoch - 1);
  const at::Tensor order = at::tensor(sampler.indices(), at::kLong);
  // A last batch of one sample is left out: batch norm cannot train on a
  // single sample (LibTorch raises). Every rank has the same number of
  // samples, so every rank leaves it out and the ranks stay in step.
  const int64_t n = order.numel() > 1 && order.numel() % settings.batch_size == 1
                        ? order.numel() - 1
                        : order.numel();
  const int64_t num_batches = (n + settings.batch_size - 1) / settings.batch_size;
  // Pinned host memory lets the copy to the GPU run without blocking.
  const bool pin = settings.device.is_cuda();
  data::PrefetchLoader<Batch> loader(
      num_batches,
      [&](int64_t b) {
        const int64_t begin = b * settings.batch_size;
        const at::Tensor index = order.narrow(0, begin, std::min(settings.batch_size, n - begin));
        at::Generator generator = batch_generator(settings.seed, epoch, job.rank, b);
        Batch batch = batches.make(index, generator);
        if (pin) {
          for (at::Tensor& tensor : batch) {
            tensor = tensor.pin_memory();
          }
        }
        return batch;
      },
      // Two batches ahead per worker, as DataLoader's prefetch_factor.
      data::PrefetchOptions()
          .workers(settings.loader_workers)
          .depth(2 * std::max(settings.loader_workers, 1))
          .device(settings.device));
  train::ProgressBar bar(fmt::format("epoch {}/{}", epoch, settings.epochs), num_batches,
                         /*enabled=*/job.rank == 0);
  double loss_sum = 0;
  while (std::optional<Batch> batch = loader.next()) {
    const int64_t samples = batch->front().size(0);
    for (at::Tensor& tensor : *batch) {
      tensor = tensor.to(settings.device, /*non_blocking=*/pin);
    }
    optimizer.zero_grad();
    at::Tensor loss;
    {
      amp::AutocastGuard autocast(settings.autocast());
      loss = batches.loss(*batch);
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
    loss_sum += batch_loss_value * static_cast<double>(samples);
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
          .step_ms = num_batches > 0 ? 1000 * seconds / static_cast<double>(num_batches) : 0,
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
