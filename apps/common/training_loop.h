// One epoch of mini-batch training for any loss, shared by the training
// apps: this rank's share of the samples from DistributedSampler, batches
// of their indices, optional autocast around each loss, a progress
// bar on rank 0, and the epoch's numbers summed over every rank. Batches
// go to the job's device; fp16 steps go through a GradScaler.
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
#include "dtrain/data/distributed_sampler.h"
#include "train_flags.h"
#include "training_job.h"

namespace dtrain::apps {

struct LoopSettings {
  int epochs = 1;           // for the progress bar's title
  int64_t batch_size = 64;  // per process
  bool bf16 = false;        // forward passes under bf16 autocast
  int64_t eval_batch = 1000;
  c10::Device device{c10::kCPU};  // where the model is and batches go
  bool fp16 = false;              // forward passes under fp16 autocast (CUDA)
  // Scales the loss and steps the optimizer when set (fp16); not owned.
  amp::GradScaler* scaler = nullptr;

  // Autocast for this device and precision (disabled in fp32).
  amp::AutocastOptions autocast() const;
};

// A generator for one epoch's augmentation on one rank, seeded by --seed,
// the rank and the epoch: a resumed run augments its epochs as an unbroken
// run would, and ranks draw differently.
at::Generator augment_generator(const CommonTrainOptions& options, const Job& job, int epoch);

// The loss scaler of --amp fp16 (torch.amp's defaults); nullptr otherwise.
std::unique_ptr<amp::GradScaler> make_loss_scaler(const CommonTrainOptions& options);

// The loop settings an app's flags and job ask for (precision, device).
LoopSettings loop_settings(const CommonTrainOptions& options, const Job& job, int64_t eval_batch,
                           amp::GradScaler* scaler = nullptr);

struct EpochStats {
  double mean_loss = 0;
  int64_t samples = 0;  // over every rank
  double seconds = 0;   // this rank's
  double step_ms = 0;   // this rank's mean time per step
  // The slowest and the fastest rank's own samples per second: a wide gap
  // means the fast ranks wait for the slow one at every all-reduce.
  double rank_samples_per_s_min = 0;
  double rank_samples_per_s_max = 0;
  // This rank's peak of GPU memory allocated by LibTorch so far, in MiB
  // (torch.cuda.max_memory_allocated); 0 on the CPU.
  double peak_device_mb = 0;
};

// What an evaluation found, over the whole test set: the mean loss, the
// share of predictions right (samples or points), and an app's own metrics.
struct EvalStats {
  double mean_loss = 0;
  double accuracy = 0;
  // Further metrics, in the order of the report's extra columns (EpochReport).
  std::vector<double> extra;
};

// The mean loss of one training batch, given the indices (int64) of its
// samples; the loop runs it under settings.autocast() (work that must stay
// fp32, such as augmentation, opens an AutocastGuard with enabled(false))
// and takes its backward. It moves its batch to settings.device.
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
