// One epoch of mini-batch training for any loss: this rank's share of the
// samples (Sharding: DistributedSampler's, or split by --rank-weights),
// batches of their indices made ahead on loader threads
// (data::PrefetchLoader), each loss under autocast, loss scaling or a check
// that the gradients are finite before each optimizer step, a progress bar
// on rank 0, mid-epoch checkpoints and stops at a step, and the epoch's
// numbers summed over every rank. Batches go to the job's device (through
// pinned memory to a GPU). The Trainer (trainer.h) runs it every epoch;
// programs with a loop of their own can too.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/amp/grad_scaler.h"
#include "dtrain/train/dataset.h"
#include "dtrain/train/epoch_stats.h"
#include "dtrain/train/job.h"
#include "dtrain/train/sharding.h"

namespace dtrain::train {

// The mean loss of a batch already on the job's device; the epoch runs it
// under autocast and takes its backward.
using LossFn = std::function<at::Tensor(const Batch& batch)>;

// Runs an epoch's steps inside DDP's join (JobModel::join).
using Join = std::function<void(const std::function<void()>& steps)>;
// Runs a micro-batch's forward and backward without DDP's all-reduce, its
// gradients summed locally into the next synchronised backward's
// (JobModel::no_sync; gradient accumulation).
using NoSync = std::function<void(const std::function<void()>& forward_backward)>;

// What an epoch trains: `module` (switched to training mode) with its
// optimizer, and how a batch's loss is computed. `join` may be empty when
// the ranks' step counts never differ (equal shards, one process).
struct EpochModel {
  torch::nn::Module* module = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  LossFn loss;
  Join join = {};
  // Needed with EpochSettings::accumulate above 1 in a distributed job.
  NoSync no_sync = {};
};

// One training step as it ran on this rank, for EpochSettings::after_step.
struct StepRecord {
  int epoch = 0;
  int64_t step = 0;     // the epoch's steps done, this one included (from 1)
  double loss = 0;      // of this rank's batch
  int64_t samples = 0;  // in this rank's batch
  // When the step began to wait for its batch, when its forward, backward
  // (with DDP's all-reduces and the wait for them) and optimizer step
  // began, and when it ended. Host clocks: GPU work may still be running.
  using Time = std::chrono::steady_clock::time_point;
  Time data{}, forward{}, backward{}, optimizer{}, end{};
};

struct EpochSettings {
  int epochs = 1;                 // for the progress bar's title
  c10::Device device{c10::kCPU};  // where the model is and batches go
  // Around each loss (disabled: fp32).
  amp::AutocastOptions autocast{c10::kCPU};
  // Scales the loss and steps the optimizer when set (fp16); not owned.
  amp::GradScaler* scaler = nullptr;
  // Batches whose gradients are summed into each optimizer step, each loss
  // weighted by its share of the step's samples (TrainerOptions::accumulate).
  int accumulate = 1;
  // Clips the gradients to this global norm before each optimizer step,
  // after the scaler's unscale (0: not clipped).
  double clip_grad_norm = 0;
  // Sets the learning rate before each optimizer step, given the epoch and
  // the optimizer steps already taken in it (empty: left as it is).
  std::function<void(int epoch, int64_t optimizer_step)> set_lr;
  // With the epoch, the rank and the batch or step, seeds each batch's
  // augmentation and each step's dropout (step_seeds.h).
  uint64_t seed = 0;
  // Threads making training batches ahead of the steps (0: each batch is
  // made in the step, on the training thread).
  int loader_workers = 1;
  // Mid-epoch checkpoints: after every this many steps (batches) of an
  // epoch (0: none; a multiple of accumulate), save_mid_epoch is called on
  // every rank.
  int64_t checkpoint_steps = 0;
  std::function<void(int epoch, const EpochPosition& position)> save_mid_epoch;
  // The ranks agree whether a stop was asked for (agreed_stop_signal)
  // every few steps and at each mid-epoch checkpoint (Note [Agreeing on a
  // stop] in train_epoch.cpp); if so the epoch's position is saved and it
  // ends there. Set when there is somewhere to save to.
  bool stop_on_signal = false;
  // Called after every step (empty: steps are not timed).
  std::function<void(const StepRecord& step)> after_step;
};

// The signal that asked this run to stop (GracefulStop), agreed by every
// rank, or 0: a collective, for the ranks to stop after the same step.
int agreed_stop_signal(const Job& job);

class EpochLoop {
 public:
  // Keeps references to `data` and `job`, which must outlive it.
  EpochLoop(EpochModel model, const Dataset& data, EpochSettings settings, const Job& job);

  // Trains epoch `epoch` over this rank's share of the samples
  // (sharding.shard(epoch), logged when weighted). When the ranks' step
  // counts differ (--rank-weights), the steps run inside the join, and
  // then every rank takes the optimizer state (and fp16 loss scale) of
  // the rank that trained to the end, as join gives it that rank's
  // parameters: replicas must stay identical.
  //
  // With checkpoint_steps, after every that many steps (while every rank
  // still has steps to take, and not at the epoch's end) the ranks sum
  // their position and call save_mid_epoch. The epoch's loss is summed over
  // the ranks at those same steps, so a run resumed there (`start`: a
  // position a mid-epoch checkpoint saved) reports the same numbers as an
  // unbroken one; its time and rates cover the steps it took. With
  // stop_on_signal, a stop asked for between two steps saves the position
  // there too and ends the epoch early (EpochStats::stop_signal).
  EpochStats train(const Sharding& sharding, int epoch, const EpochPosition& start = {}) const;

 private:
  EpochModel model_;
  const Dataset* data_;
  EpochSettings settings_;
  const Job* job_;
};

// Number of trainable values in `module`, for logs.
int64_t parameter_count(const torch::nn::Module& module);

}  // namespace dtrain::train
