#include "dtrain/train/train_epoch.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "dtrain/ddp/broadcast.h"
#include "dtrain/dist/init.h"
#include "dtrain/train/graceful_stop.h"
#include "dtrain/train/progress_bar.h"
#include "dtrain/train/step_seeds.h"
#include "dtrain/util/device_memory.h"
#include "dtrain/util/errors.h"
#include "epoch_batches.h"
#include "training_step.h"

namespace dtrain::train {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

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

// The epoch so far over every rank, summed at each checkpoint step (so a
// resumed epoch adds up exactly as an unbroken one), and this rank's steps
// since.
class EpochTally {
 public:
  explicit EpochTally(const EpochPosition& start) : position_(start) {}

  // Adds a step's loss where it lies (on a GPU, without waiting for it),
  // in double, as the sums of the position are kept.
  void add(const at::Tensor& loss, int64_t samples) {
    const at::Tensor weighted = loss.to(at::kDouble) * static_cast<double>(samples);
    loss_since_ = loss_since_.defined() ? loss_since_ + weighted : weighted;
    samples_since_ += samples;
    trained_samples_ += samples;
  }
  // Adds every rank's steps since the last call to the position, now
  // `steps` into the epoch: a collective, and a read of the losses.
  void fold_in(int64_t steps, const Job& job) {
    const double loss_since = loss_since_.defined() ? loss_since_.item<double>() : 0.0;
    const auto sums = job.sum({loss_since, static_cast<double>(samples_since_)});
    position_ = {.steps = steps,
                 .loss_sum = position_.loss_sum + sums[0],
                 .samples = position_.samples + static_cast<int64_t>(sums[1])};
    loss_since_ = at::Tensor();
    samples_since_ = 0;
  }
  const EpochPosition& position() const { return position_; }
  int64_t trained_samples() const { return trained_samples_; }  // this rank's, in this run

 private:
  EpochPosition position_;
  at::Tensor loss_since_;  // this rank's losses times samples since the last fold_in
  int64_t samples_since_ = 0;
  int64_t trained_samples_ = 0;
};

// How an epoch's batches fall into optimizer steps: `accumulate` batches a
// step (fewer in the epoch's last), each of batch_size samples but the
// epoch's last, which holds what is left.
struct StepGroups {
  int64_t batches = 0;
  int64_t batch_size = 0;
  int64_t samples = 0;  // of this rank's epoch
  int accumulate = 1;

  detail::MicroBatch micro_batch(int64_t batch, int64_t samples_in_batch) const {
    const int64_t first = batch - batch % accumulate;
    const int64_t last = std::min(first + accumulate, batches) - 1;
    const int64_t group_samples =
        (last == batches - 1 ? samples : (last + 1) * batch_size) - first * batch_size;
    return {.first = batch == first,
            .last = batch == last,
            .weight = accumulate == 1 ? 1.0
                                      : static_cast<double>(samples_in_batch) /
                                            static_cast<double>(group_samples)};
  }
};

// The steps of one epoch on this rank, and what is due after each: a
// mid-epoch checkpoint, a stop the ranks agreed on.
class StepLoop {
 public:
  StepLoop(const EpochModel& model, const EpochSettings& settings, const Job& job, int epoch,
           StepGroups groups)
      : model_(model), settings_(settings), job_(job), epoch_(epoch), groups_(groups) {}

  // Steps from `step` on until the batches end or a stop is agreed; then
  // the stop's signal (0: none) and the steps taken by then. Counts the
  // optimizer steps the loss scaler skipped into `skipped`.
  std::pair<int, int64_t> run(data::PrefetchLoader<Batch>& batches, ProgressBar& bar,
                              EpochTally& tally, int64_t step, int64_t common_steps,
                              int64_t& skipped) const {
    const bool pinned = settings_.device.is_cuda();
    const bool timed = static_cast<bool>(settings_.after_step);
    StepRecord record{.epoch = epoch_};
    if (timed) {
      record.data = Clock::now();
    }
    while (std::optional<Batch> batch = batches.next()) {
      const int64_t samples = batch->front().size(0);
      for (at::Tensor& tensor : *batch) {
        tensor = tensor.to(settings_.device, /*non_blocking=*/pinned);
      }
      const detail::MicroBatch micro = groups_.micro_batch(step, samples);
      if (micro.first && settings_.set_lr) {
        settings_.set_lr(epoch_, step / groups_.accumulate);
      }
      seed_step_draws(settings_.seed, epoch_, job_.rank, step);
      const detail::BatchResult result = detail::take_step(model_, *batch, settings_, epoch_, step,
                                                           micro, timed ? &record : nullptr);
      skipped += result.skipped ? 1 : 0;
      const at::Tensor& loss = result.loss;
      tally.add(loss, samples);
      ++step;
      if (timed) {
        record.step = step;
        record.samples = samples;
        settings_.after_step(record);
        record.data = Clock::now();
      }
      bar.advance(1, [&loss] { return fmt::format("loss {:.4f}", loss.item<double>()); });
      // Positions are saved only while every rank still steps (ranks with
      // fewer steps may already wait in DDP's join), and between optimizer
      // steps (a step's summed gradients are not saved).
      if (step >= common_steps || !micro.last) {
        continue;
      }
      const bool checkpoint_due =
          settings_.checkpoint_steps > 0 && step % settings_.checkpoint_steps == 0;
      const int stop =
          agreement_due(step, checkpoint_due, common_steps) ? agreed_stop_signal(job_) : 0;
      if ((checkpoint_due || stop != 0) && settings_.save_mid_epoch) {
        tally.fold_in(step, job_);
        settings_.save_mid_epoch(epoch_, tally.position());
      }
      if (stop != 0) {
        return {stop, step};
      }
    }
    return {0, step};
  }

 private:
  // Note [Agreeing on a stop]
  // A stop asked for by a signal (SIGTERM, a scheduler's warning) must
  // happen at the same step on every rank, so the ranks agree on it: a
  // blocking collective, which on a GPU also waits for the step's kernels.
  // Alone there is nothing to agree on; with others they agree every
  // kStopAgreementSteps optimizer steps, at each mid-epoch checkpoint and
  // after the last optimizer step but one of the epoch (so a signal in an
  // epoch's last steps still stops inside it), so a stop comes within that
  // many steps of the signal, and the other steps run on without a wait.
  static constexpr int64_t kStopAgreementSteps = 4;
  // `step`: the batches done, at the end of an optimizer step.
  bool agreement_due(int64_t step, bool checkpoint_due, int64_t common_steps) const {
    const int64_t k = groups_.accumulate;
    const int64_t optimizer_steps = (step + k - 1) / k;
    return settings_.stop_on_signal &&
           (!job_.distributed() || checkpoint_due || optimizer_steps % kStopAgreementSteps == 0 ||
            step + k >= common_steps);
  }

  const EpochModel& model_;
  const EpochSettings& settings_;
  const Job& job_;
  int epoch_;
  StepGroups groups_;
};

}  // namespace

int agreed_stop_signal(const Job& job) {
  const double local = GracefulStop::signal();
  if (!job.distributed()) {
    return static_cast<int>(local);
  }
  const std::vector<double> signals = job.each(local);
  return static_cast<int>(*std::max_element(signals.begin(), signals.end()));
}

EpochLoop::EpochLoop(EpochModel model, const Dataset& data, EpochSettings settings, const Job& job)
    : model_(std::move(model)), data_(&data), settings_(std::move(settings)), job_(&job) {
  DTRAIN_CHECK(model_.module != nullptr && model_.optimizer != nullptr && model_.loss,
               "EpochLoop: the model needs a module, an optimizer and a loss");
  DTRAIN_CHECK(settings_.accumulate >= 1, "EpochLoop: accumulate must be at least 1, got ",
               settings_.accumulate);
  DTRAIN_CHECK(settings_.accumulate == 1 || !job.distributed() || model_.no_sync,
               "EpochLoop: accumulating gradients in a distributed job needs the model's no_sync "
               "(each batch would be all-reduced)");
}

EpochStats EpochLoop::train(const Sharding& sharding, int epoch, const EpochPosition& start) const {
  model_.module->train();
  util::reset_peak_device_memory(settings_.device);
  const auto start_time = Clock::now();
  const EpochShard shard = sharding.shard(epoch);
  sharding.log(shard, epoch, settings_.epochs);
  const bool joined = shard.steps_differ() && job_->distributed();
  DTRAIN_CHECK(!joined || model_.join,
               "train_epoch: the ranks take different numbers of steps but no join was given (the "
               "shorter ranks would hang the others)");
  // Steps every rank takes: positions before the last of them can be summed
  // and saved by all ranks together (the others may already have joined).
  const int64_t common_steps =
      shard.weighted() ? *std::min_element(shard.rank_steps.begin(), shard.rank_steps.end())
                       : shard.steps;
  DTRAIN_CHECK(start.steps == 0 || (start.steps > 0 && start.steps < common_steps),
               "train_epoch: epoch ", epoch, " cannot resume after step ", start.steps,
               "; its ranks take ", common_steps, " step(s) each");
  const auto batches =
      detail::epoch_batches(*data_, shard, start.steps, settings_, epoch, job_->rank);
  ProgressBar bar(start.steps == 0 ? fmt::format("epoch {}/{}", epoch, settings_.epochs)
                                   : fmt::format("epoch {}/{} from step {}", epoch,
                                                 settings_.epochs, start.steps + 1),
                  shard.steps - start.steps, /*enabled=*/job_->rank == 0);
  EpochTally tally(start);
  const StepLoop loop(model_, settings_, *job_, epoch,
                      StepGroups{.batches = shard.steps,
                                 .batch_size = shard.batch_size,
                                 .samples = static_cast<int64_t>(shard.indices.size()),
                                 .accumulate = settings_.accumulate});
  std::pair<int, int64_t> stop;  // the signal, the steps taken
  int64_t skipped = 0;
  double loop_seconds = 0;
  auto steps = [&] {
    stop = loop.run(*batches, bar, tally, start.steps, common_steps, skipped);
    loop_seconds = seconds_since(start_time);
  };
  if (joined) {
    model_.join(steps);
    adopt_training_state(*model_.optimizer, settings_.scaler, shard.last_to_finish());
  } else {
    steps();
  }
  bar.finish(stop.first != 0 ? fmt::format("stopped by signal {}", stop.first) : "");
  if (stop.first != 0) {
    return {.stop_signal = stop.first, .stopped_after = stop.second};
  }
  tally.fold_in(shard.steps, *job_);
  const double seconds = seconds_since(start_time);
  const std::vector<double> rates =
      job_->each(static_cast<double>(tally.trained_samples()) / seconds);
  const int64_t steps_taken = shard.steps - start.steps;
  return {.mean_loss = tally.position().loss_sum / static_cast<double>(tally.position().samples),
          .samples = tally.position().samples,
          .seconds = seconds,
          .rank_samples = tally.trained_samples(),
          .loop_seconds = loop_seconds,
          .step_ms = steps_taken > 0 ? 1000 * seconds / static_cast<double>(steps_taken) : 0,
          .rank_samples_per_s_min = *std::min_element(rates.begin(), rates.end()),
          .rank_samples_per_s_max = *std::max_element(rates.begin(), rates.end()),
          .peak_device_mb = util::peak_device_mb(settings_.device),
          .skipped_steps = skipped,
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

}  // namespace dtrain::train
