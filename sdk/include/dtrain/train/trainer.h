// dtrain::train::Trainer: the whole training run that research code hands
// a model, a training set, an optimizer and how a batch is scored, in one
// process or data-parallel over several (dtrun, torchrun-style variables,
// mpirun or srun):
//
//   Trainer trainer(options, flags);                  // the job's device, known at once
//   Net model(...);
//   model->to(trainer.device());
//   torch::optim::Adam adam(model->parameters(), options.lr());
//   return trainer.fit(model, adam, TensorDataset({points, labels}),
//                      [](JobModel<Net>& net, const Batch& batch) {   // a step's mean loss
//                        return F::cross_entropy(net.train(batch[0]), batch[1]);
//                      },
//                      [&](JobModel<Net>& net, const EvalContext& context) {  // after each epoch
//                        return evaluate(net, test, context);
//                      });
//
// fit() starts the job (the process group, when the launcher counts more
// than one process), checks that every process was given the same flags
// and the same training labels, wraps the model in DDP, and trains the
// epochs: each process's share of the samples (DistributedSampler, or
// --rank-weights for mixed hardware, DDP's join where step counts differ),
// batches made ahead on loader threads, the forward under autocast and an
// fp16 loss scaler as TrainerOptions::precision says, a NaN guard before
// each optimizer step, a progress bar on rank 0, the learning rate of
// each epoch (lr_schedule.h), evaluation, one CSV row per epoch with rates,
// communication and peak memory (epoch_report.h), atomic checkpoints by
// rank 0 at each epoch's end and every checkpoint_steps steps, resume at
// the step, and a stop at a step with a checkpoint on SIGTERM or SIGINT.
// It returns the process's exit code: 0, or 128 + the signal that stopped
// the run. Errors (a bad option, a missing GPU, processes that disagree, a
// diverged run) are thrown as dtrain::Error, on every rank alike where they
// concern the job.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "dtrain/ddp/timeline.h"
#include "dtrain/dist/setting.h"
#include "dtrain/train/comm_stats.h"
#include "dtrain/train/dataset.h"
#include "dtrain/train/evaluation.h"
#include "dtrain/train/job.h"
#include "dtrain/train/job_model.h"
#include "dtrain/train/train_epoch.h"
#include "dtrain/train/trainer_options.h"
#include "dtrain/util/launch_env.h"

namespace dtrain::train {

class FlagTable;  // flag_table.h: the opt-in command line (trainer_flags.h)

// A training step: the mean loss of a batch already on the job's device
// (the Trainer runs it under autocast, takes its backward and steps).
template <typename ModuleHolder>
using Step = std::function<at::Tensor(JobModel<ModuleHolder>& model, const Batch& batch)>;

// An evaluation after each epoch (evaluation.h): the whole test set's
// numbers, on every rank.
template <typename ModuleHolder>
using Evaluate =
    std::function<EvalStats(JobModel<ModuleHolder>& model, const EvalContext& context)>;

// A checkpoint's evaluation without training (Trainer::evaluate): how far
// its run had trained, and the whole test set's numbers.
struct CheckpointEval {
  int64_t epochs_done = 0;
  int64_t steps_done = 0;  // into the next epoch (a mid-epoch checkpoint)
  EvalStats stats;
};

namespace detail {

// What a run needs of the model in its job, whatever the module's type.
struct ModelInJob {
  LossFn loss;
  std::function<EvalStats(const EvalContext&)> evaluate;
  Join join;
  NoSync no_sync;
  std::function<CommStats()> comm;
  // DDP's record of the epoch's steps so far (none alone), for --trace.
  std::function<std::vector<ddp::StepEvents>()> timeline;
};

}  // namespace detail

class Trainer {
 public:
  // Checks `options` (option_problem), sets the intra-op threads, reads
  // the launcher's variables (naming the rank in error lines from here on)
  // and chooses the device, so that a missing GPU is named before any data
  // is read. Throws dtrain::Error.
  explicit Trainer(TrainerOptions options);
  // The same, and the processes of a job compare `flags`' same_settings()
  // when it starts, with its advice when they differ.
  Trainer(TrainerOptions options, const FlagTable& flags);

  const TrainerOptions& options() const { return options_; }
  // What every checkpoint will say of the model (TrainerOptions::
  // checkpoint_notes), for apps that know it only once the data is read.
  void set_checkpoint_notes(CheckpointNotes notes) { options_.checkpoint_notes(std::move(notes)); }
  // The CPU, or the GPU of this process's local rank (made current).
  c10::Device device() const { return device_; }

  // Trains `model` (already on device(), its parameters those of
  // `optimizer`) on `train`; see the top of this header. Every process of
  // the job must call it.
  template <typename ModuleHolder>
  int fit(ModuleHolder model, torch::optim::Optimizer& optimizer, const Dataset& train,
          std::type_identity_t<Step<ModuleHolder>> step,
          std::type_identity_t<Evaluate<ModuleHolder>> evaluate) {
    std::optional<JobModel<ModuleHolder>> in_job;
    return run(*model, optimizer, train, [&](const Job& job, bool sample_count) {
      in_job.emplace(model, job, sample_count, options_.ddp());
      return ModelInJob{
          .loss = [&in_job, step](const Batch& batch) { return step(*in_job, batch); },
          .evaluate = [&in_job,
                       evaluate](const EvalContext& context) { return evaluate(*in_job, context); },
          .join = in_job->join(),
          .no_sync = in_job->no_sync(),
          .comm = [&in_job] { return in_job->take_comm_stats(); },
          .timeline = [&in_job] { return in_job->timeline_steps(); }};
    });
  }

  // Evaluates the checkpoint at options().checkpoint() without training
  // (the apps' --eval-only): loads the model's state from it into `model`
  // (already on device()), joins the job, whose processes compare the flags
  // and the checkpoint's epoch, and calls `evaluate` once as after an
  // epoch: the module in evaluation mode, without gradients, under the
  // run's autocast, each rank scoring its slice of the test set. Logs the
  // numbers on rank 0. Every process of the job must call it; each gets the
  // whole set's numbers. Throws dtrain::Error when no checkpoint is named,
  // dtrain::IOError naming the file when it is missing or does not fit.
  template <typename ModuleHolder>
  CheckpointEval evaluate(ModuleHolder model,
                          std::type_identity_t<Evaluate<ModuleHolder>> evaluate) {
    auto alone = JobModel<ModuleHolder>::for_evaluation(model);
    return run_evaluation(*model,
                          [&](const EvalContext& context) { return evaluate(alone, context); });
  }

 private:
  using ModelInJob = detail::ModelInJob;
  // Wraps the model for its job (DDP when distributed) once the job has
  // started; `sample_count`: DDP weights gradients by samples.
  using PutInJob = std::function<ModelInJob(const Job& job, bool sample_count)>;

  int run(torch::nn::Module& module, torch::optim::Optimizer& optimizer, const Dataset& train,
          const PutInJob& put_in_job);
  CheckpointEval run_evaluation(torch::nn::Module& module,
                                const std::function<EvalStats(const EvalContext&)>& evaluate);

  TrainerOptions options_;
  util::LaunchEnv env_;
  c10::Device device_;
  std::vector<dist::Setting> same_settings_;
  std::string advice_;
};

}  // namespace dtrain::train
