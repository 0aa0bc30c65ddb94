// One epoch of mini-batch training for any loss, shared by the training
// apps: this rank's share of the samples (Sharding: DistributedSampler's,
// or split by --rank-weights), batches of their indices made ahead on
// loader threads (data::PrefetchLoader), optional autocast around each
// loss, a progress bar on rank 0, and the epoch's numbers summed over
// every rank. Batches go to the job's device (through pinned memory to a
// GPU); fp16 steps go through a GradScaler.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/amp/grad_scaler.h"
#include "sharding.h"
#include "train_flags.h"
#include "training_job.h"

namespace dtrain::apps {

// Where an epoch stands after some of its steps, summed over every rank:
// what a mid-epoch checkpoint keeps, and where a resumed epoch starts.
struct EpochPosition {
  int64_t steps = 0;    // steps every rank has taken
  double loss_sum = 0;  // their losses times their samples
  int64_t samples = 0;  // their samples
};

struct LoopSettings {
  int epochs = 1;     // for the progress bar's title
  bool bf16 = false;  // forward passes under bf16 autocast
  int64_t eval_batch = 1000;
  c10::Device device{c10::kCPU};  // where the model is and batches go
  bool fp16 = false;              // forward passes under fp16 autocast (CUDA)
  // Scales the loss and steps the optimizer when set (fp16); not owned.
  amp::GradScaler* scaler = nullptr;
  // --seed: with the epoch, the rank and the batch, it seeds each training
  // batch's augmentation (batch_generator).
  uint64_t seed = 0;
  // Threads making training batches ahead of the steps (0: each batch
  // is made in the step, on the training thread).
  int loader_workers = 1;
  // Mid-epoch checkpoints (--checkpoint-steps): after every this many steps
  // of an epoch (0: none), save_mid_epoch is called on every rank.
  int64_t checkpoint_steps = 0;
  std::function<void(int epoch, const EpochPosition& position)> save_mid_epoch;
  // After every step, the ranks agree whether a stop was asked for
  // (agreed_stop_signal); if so the epoch's position is saved and it ends
  // there. Set with --checkpoint: there is somewhere to save to.
  bool stop_on_signal = false;

  // Autocast for this device and precision (disabled in fp32).
  amp::AutocastOptions autocast() const;
};

// The generator of one training batch's augmentation, seeded by --seed,
// the epoch, the rank and the batch's number in the epoch: a resumed run
// augments its epochs as an unbroken run would, ranks draw differently,
// and a batch is the same whichever loader thread makes it.
at::Generator batch_generator(uint64_t seed, int epoch, int rank, int64_t batch);

// Seeds LibTorch's default generators (dropout's masks) from --seed, the
// epoch, the rank and the step; train_epoch calls it before every step, so
// a run resumed from a checkpoint, even one taken mid-epoch, trains exactly
// as an unbroken run would, and ranks draw differently.
void seed_step_draws(uint64_t seed, int epoch, int rank, int64_t step);

// The signal that asked this run to stop (train::GracefulStop), agreed by
// every rank, or 0: a collective, for the ranks to stop after the same step.
int agreed_stop_signal(const Job& job);

// The loss scaler of --amp fp16 (torch.amp's defaults); nullptr otherwise.
std::unique_ptr<amp::GradScaler> make_loss_scaler(const CommonTrainOptions& options);

// The loop settings an app's flags and job ask for (precision, device).
LoopSettings loop_settings(const CommonTrainOptions& options, const Job& job, int64_t eval_batch,
                           amp::GradScaler* scaler = nullptr);

struct EpochStats {
  double mean_loss = 0;
  int64_t samples = 0;       // over every rank
  double seconds = 0;        // this rank's
  int64_t rank_samples = 0;  // this rank's, in the steps this run took
  // This rank's time until its own last step ended: without the wait in
  // DDP's join for ranks with more steps (Sharding::measure).
  double loop_seconds = 0;
  double step_ms = 0;  // this rank's mean time per step
  // The slowest and the fastest rank's own samples per second: a wide gap
  // means the fast ranks wait for the slow one at every all-reduce.
  double rank_samples_per_s_min = 0;
  double rank_samples_per_s_max = 0;
  // This rank's peak of GPU memory allocated by LibTorch during the
  // epoch's training, in MiB (torch.cuda.max_memory_allocated after
  // reset_peak_memory_stats at its start); 0 on the CPU.
  double peak_device_mb = 0;
  // Not 0: a stop was asked for by this signal, and the epoch ended after
  // `stopped_after` steps, saved by settings.save_mid_epoch; the other
  // numbers are then not the epoch's.
  int stop_signal = 0;
  int64_t stopped_after = 0;
};

// What an evaluation found, over the whole test set: the mean loss, the
// share of predictions right (samples or points), and an app's own metrics.
struct EvalStats {
  double mean_loss = 0;
  double accuracy = 0;
  // Further metrics, in the order of the report's extra columns (EpochReport).
  std::vector<double> extra = {};
};

// One training batch's tensors (inputs first, one row per sample; then
// labels, ...), first on the CPU as TrainBatches::make gives them, then on
// the loop's device.
using Batch = std::vector<at::Tensor>;

// How an app's training batches are made and scored.
struct TrainBatches {
  // The samples at `index` (int64), selected and augmented on the CPU,
  // drawing only from `generator` (the batch's own). Runs on a loader
  // thread, concurrently with training steps and other batches' makes, and
  // outside autocast, so augmentation is in fp32.
  std::function<Batch(const at::Tensor& index, at::Generator& generator)> make;
  // The mean loss of a batch already on the device; the loop runs it under
  // settings.autocast() and takes its backward.
  std::function<at::Tensor(const Batch& batch)> loss;
};

// Runs an epoch's steps inside DDP's join (JobModel::join).
using Join = std::function<void(const std::function<void()>& steps)>;

// Trains one epoch over this rank's share of the samples
// (sharding.shard(epoch), logged when weighted). `module` is switched to
// training mode. When the ranks' step counts differ (--rank-weights), the
// steps run inside `join`, and then every rank takes the optimizer state
// (and fp16 loss scale) of the rank that trained to the end, as join gives
// it that rank's parameters: replicas must stay identical. `join` may be
// empty when step counts never differ (equal shards, one process).
//
// With settings.checkpoint_steps, after every that many steps (while every
// rank still has steps to take, and not at the epoch's end) the ranks sum
// their position and call settings.save_mid_epoch. The epoch's loss is
// summed over the ranks at those same steps, so a run resumed there
// (`start`: a position a mid-epoch checkpoint saved) reports the same
// numbers as an unbroken one; its time and rates cover the steps it took.
// With settings.stop_on_signal, a stop asked for between two steps saves
// the position there too and ends the epoch early (EpochStats::stop_signal);
// a run resumed from it trains as an unbroken one, and its epoch's loss
// differs from an unbroken run's only by the order of the sum.
EpochStats train_epoch(torch::nn::Module& module, torch::optim::Optimizer& optimizer,
                       const Sharding& sharding, const LoopSettings& settings, int epoch,
                       const Job& job, const TrainBatches& batches, const Join& join = {},
                       const EpochPosition& start = {});

// Number of trainable values in `module`, for logs.
int64_t parameter_count(const torch::nn::Module& module);

}  // namespace dtrain::apps
