#include "training_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/utils.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/data/prefetch_loader.h"
#include "dtrain/ddp/broadcast.h"
#include "dtrain/dist/init.h"
#include "dtrain/train/finite_gradients.h"
#include "dtrain/train/graceful_stop.h"
#include "dtrain/train/progress_bar.h"
#include "dtrain/util/device_memory.h"
#include "dtrain/util/errors.h"

namespace dtrain::apps {

namespace {

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

// After an epoch whose ranks took different numbers of steps: those that
// finished early skipped the last optimizer steps, and DDP's join gave them
// only the parameters of `root`, the rank that trained to the end. Its
// optimizer state (Adam's moments and step counts) and loss scale come too,
// or the replicas' next updates would differ.
void adopt_training_state(torch::optim::Optimizer& optimizer, amp::GradScaler* scaler, int root) {
  ddp::broadcast_optimizer_state(optimizer, root);
  if (scaler == nullptr) {
    return;
  }
  if (std::optional<amp::GradScalerState> state = scaler->state_dict()) {
    at::Tensor values = at::tensor({state->scale, static_cast<double>(state->growth_tracker),
                                    static_cast<double>(state->hysteresis_tracker)},
                                   at::kDouble);
    dist::broadcast(values, root);
    state->scale = values[0].item<double>();
    state->growth_tracker = values[1].item<int64_t>();
    state->hysteresis_tracker = values[2].item<int64_t>();
    scaler->load_state_dict(*state);
  }
}

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

void seed_step_draws(uint64_t seed, int epoch, int rank, int64_t step) {
  torch::manual_seed(stream_seed(seed, {kDropoutStream, static_cast<uint64_t>(epoch),
                                        static_cast<uint64_t>(rank), static_cast<uint64_t>(step)}));
}

namespace {

// "NaN" for either sign of NaN, "inf", "1.2009".
std::string loss_text(double loss) {
  return std::isnan(loss) ? "NaN" : fmt::format("{:g}", loss);
}

}  // namespace

int agreed_stop_signal(const Job& job) {
  const double local = train::GracefulStop::signal();
  if (!job.distributed()) {
    return static_cast<int>(local);
  }
  const std::vector<double> signals = job.each(local);
  return static_cast<int>(*std::max_element(signals.begin(), signals.end()));
}

std::unique_ptr<amp::GradScaler> make_loss_scaler(const CommonTrainOptions& options) {
  return options.amp == "fp16" ? std::make_unique<amp::GradScaler>() : nullptr;
}

LoopSettings loop_settings(const CommonTrainOptions& options, const Job& job, int64_t eval_batch,
                           amp::GradScaler* scaler) {
  return {.epochs = options.epochs,
          .bf16 = options.amp == "bf16",
          .eval_batch = eval_batch,
          .device = job.device,
          .fp16 = options.amp == "fp16",
          .scaler = scaler,
          .seed = options.seed,
          .loader_workers = options.loader_workers,
          .checkpoint_steps = options.checkpoint.empty() ? 0 : options.checkpoint_steps,
          .save_mid_epoch = {},
          .stop_on_signal = !options.checkpoint.empty()};
}

EpochStats train_epoch(torch::nn::Module& module, torch::optim::Optimizer& optimizer,
                       const Sharding& sharding, const LoopSettings& settings, int epoch,
                       const Job& job, const TrainBatches& batches, const Join& join,
                       const EpochPosition& start) {
  module.train();
  util::reset_peak_device_memory(settings.device);
  const auto start_time = std::chrono::steady_clock::now();
  const EpochShard shard = sharding.shard(epoch);
  sharding.log(shard, epoch, settings.epochs);
  const bool joined = shard.steps_differ() && job.distributed();
  DTRAIN_CHECK(!joined || join,
               "train_epoch: the ranks take different numbers of steps but no join was given (the "
               "shorter ranks would hang the others)");
  const at::Tensor order = at::tensor(shard.indices, at::kLong);
  const int64_t n = order.numel();
  const int64_t batch_size = shard.batch_size;
  const int64_t num_batches = shard.steps;
  // Steps every rank takes: positions before the last of them can be summed
  // and saved by all ranks together (the others may already have joined).
  const int64_t common_steps =
      shard.weighted() ? *std::min_element(shard.rank_steps.begin(), shard.rank_steps.end())
                       : num_batches;
  DTRAIN_CHECK(start.steps == 0 || (start.steps > 0 && start.steps < common_steps),
               "train_epoch: epoch ", epoch, " cannot resume after step ", start.steps,
               "; its ranks take ", common_steps, " step(s) each");
  // Pinned host memory lets the copy to the GPU run without blocking.
  const bool pin = settings.device.is_cuda();
  data::PrefetchLoader<Batch> loader(
      num_batches - start.steps,
      [&](int64_t i) {
        // The last batch takes what is left: fewer, or one more (Sharding).
        const int64_t b = start.steps + i;
        const int64_t begin = b * batch_size;
        const at::Tensor index =
            order.narrow(0, begin, b + 1 == num_batches ? n - begin : batch_size);
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
  train::ProgressBar bar(start.steps == 0 ? fmt::format("epoch {}/{}", epoch, settings.epochs)
                                          : fmt::format("epoch {}/{} from step {}", epoch,
                                                        settings.epochs, start.steps + 1),
                         num_batches - start.steps, /*enabled=*/job.rank == 0);
  // The epoch so far over every rank (summed at each checkpoint step, so a
  // resumed epoch adds up exactly as an unbroken one), and this rank's
  // steps since.
  EpochPosition position = start;
  double loss_since = 0;
  int64_t samples_since = 0;
  int64_t trained_samples = 0;  // this rank's, in this run
  int stop_signal = 0;
  int64_t stopped_after = 0;
  auto fold_in = [&](int64_t steps) {
    const auto sums = job.sum({loss_since, static_cast<double>(samples_since)});
    position = {.steps = steps,
                .loss_sum = position.loss_sum + sums[0],
                .samples = position.samples + static_cast<int64_t>(sums[1])};
    loss_since = 0;
    samples_since = 0;
  };
  auto steps = [&] {
    int64_t step = start.steps;
    while (std::optional<Batch> batch = loader.next()) {
      const int64_t samples = batch->front().size(0);
      for (at::Tensor& tensor : *batch) {
        tensor = tensor.to(settings.device, /*non_blocking=*/pin);
      }
      seed_step_draws(settings.seed, epoch, job.rank, step);
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
        // Non-finite gradients would make every parameter NaN (a scaler,
        // above, skips such steps instead). Every rank holds the same
        // all-reduced gradients, so all of them stop here together.
        DTRAIN_CHECK(train::gradients_are_finite(optimizer), "epoch ", epoch, ", step ", step + 1,
                     ": the gradients hold NaN or infinite values (this process's loss: ",
                     loss_text(loss.item<double>()),
                     "): training diverged, and the step was not taken; try a lower --lr");
        optimizer.step();
      }
      const double batch_loss_value = loss.item<double>();
      loss_since += batch_loss_value * static_cast<double>(samples);
      samples_since += samples;
      trained_samples += samples;
      ++step;
      bar.advance(1, fmt::format("loss {:.4f}", batch_loss_value));
      // Positions are saved only while every rank still steps: ranks with
      // fewer steps may already wait in DDP's join.
      if (step >= common_steps) {
        continue;
      }
      const bool checkpoint_due =
          settings.checkpoint_steps > 0 && step % settings.checkpoint_steps == 0;
      const int stop = settings.stop_on_signal ? agreed_stop_signal(job) : 0;
      if ((checkpoint_due || stop != 0) && settings.save_mid_epoch) {
        fold_in(step);
        settings.save_mid_epoch(epoch, position);
      }
      if (stop != 0) {
        stop_signal = stop;
        stopped_after = step;
        return;
      }
    }
  };
  auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
  };
  double loop_seconds = 0;
  if (joined) {
    join([&] {
      steps();
      loop_seconds = seconds_since_start();
    });
    adopt_training_state(optimizer, settings.scaler, shard.last_to_finish());
  } else {
    steps();
    loop_seconds = seconds_since_start();
  }
  bar.finish(stop_signal != 0 ? fmt::format("stopped by signal {}", stop_signal) : "");
  if (stop_signal != 0) {
    return {.stop_signal = stop_signal, .stopped_after = stopped_after};
  }
  fold_in(num_batches);
  const double seconds = seconds_since_start();
  const std::vector<double> rates = job.each(static_cast<double>(trained_samples) / seconds);
  const int64_t steps_taken = num_batches - start.steps;
  return {.mean_loss = position.loss_sum / static_cast<double>(position.samples),
          .samples = position.samples,
          .seconds = seconds,
          .rank_samples = trained_samples,
          .loop_seconds = loop_seconds,
          .step_ms = steps_taken > 0 ? 1000 * seconds / static_cast<double>(steps_taken) : 0,
          .rank_samples_per_s_min = *std::min_element(rates.begin(), rates.end()),
          .rank_samples_per_s_max = *std::max_element(rates.begin(), rates.end()),
          .peak_device_mb = util::peak_device_mb(settings.device),
          .stop_signal = 0,
          .stopped_after = 0};
}

int64_t parameter_count(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const at::Tensor& parameter : module.parameters()) {
    count += parameter.numel();
  }
  return count;
}

}  // namespace dtrain::apps
