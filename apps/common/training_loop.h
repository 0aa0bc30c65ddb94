// One epoch of mini-batch training for any loss, shared by the training
// apps: this rank's share of the samples from DistributedSampler, batches
// of their indices, optional CPU bf16 autocast around each loss, a progress
// bar on rank 0, and the epoch's numbers summed over every rank.
#pragma once

#include <cstdint>
#include <functional>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "dtrain/data/distributed_sampler.h"
#include "training_job.h"

namespace dtrain::apps {

struct LoopSettings {
  int epochs = 1;           // for the progress bar's title
  int64_t batch_size = 64;  // per process
  bool bf16 = false;        // forward passes under CPU bf16 autocast
  int64_t eval_batch = 1000;
};

struct EpochStats {
  double mean_loss = 0;
  int64_t samples = 0;  // over every rank
  double seconds = 0;   // this rank's
  double step_ms = 0;   // this rank's mean time per step
  // The slowest and the fastest rank's own samples per second: a wide gap
  // means the fast ranks wait for the slow one at every all-reduce.
  double rank_samples_per_s_min = 0;
  double rank_samples_per_s_max = 0;
};

// The mean loss of one training batch, given the indices (int64) of its
// samples; the loop runs it under CPU autocast when settings.bf16 says so
// (work that must stay fp32, such as augmentation, opens an AutocastGuard
// with enabled(false)) and takes its backward.
using BatchLoss = std::function<at::Tensor(const at::Tensor& index)>;

// Trains one epoch over this rank's share of the samples (the sampler, set
// to `epoch` - 1), leaving out a last batch of a single sample (batch norm
// cannot train on one). `module` is switched to training mode.
EpochStats train_epoch(torch::nn::Module& module, torch::optim::Optimizer& optimizer,
                       data::DistributedSampler& sampler, const LoopSettings& settings, int epoch,
                       const Job& job, const BatchLoss& batch_loss);

// Number of trainable values in `module`, for logs.
int64_t parameter_count(const torch::nn::Module& module);

}  // namespace dtrain::apps
