// The non-template body of Trainer::fit (trainer.h), in the order a run
// takes: the loss scaler, the checkpoint to resume from and the report
// (before the job starts, so a bad path fails early); the job, the check
// that every process was given the same settings and data, and where to
// resume; the split of the epochs; then the epochs, each with its learning
// rate, evaluation, report row and checkpoint.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "dtrain/amp/grad_scaler.h"
#include "dtrain/dist/setting.h"
#include "dtrain/train/dataset.h"
#include "dtrain/train/epoch_report.h"
#include "dtrain/train/run_checkpoints.h"
#include "dtrain/train/sharding.h"
#include "dtrain/train/trainer.h"
#include "dtrain/train/trainer_options.h"
#include "dtrain/util/launch_env.h"
#include "run_tensorboard.h"
#include "run_trace.h"

namespace dtrain::train::detail {

// One evaluation as the Trainer runs it, after an epoch or of a checkpoint:
// the module in evaluation mode, without gradients, under `autocast`.
EvalStats evaluate_once(torch::nn::Module& module, const amp::AutocastOptions& autocast,
                        const EvalContext& context,
                        const std::function<EvalStats(const EvalContext&)>& evaluate);

class TrainerRun {
 public:
  // Keeps references to everything it is given, which must outlive it.
  TrainerRun(const TrainerOptions& options, const util::LaunchEnv& env, c10::Device device,
             torch::nn::Module& module, torch::optim::Optimizer& optimizer, const Dataset& train);

  // Joins the job; its processes compare `same_settings`, the training
  // set's size and its labels' fingerprint (saying `advice` when they
  // differ), and where they resume.
  void start(const std::vector<dist::Setting>& same_settings, const std::string& advice);
  // The checkpoint already holds every epoch: says so and leaves the job.
  bool nothing_left() const;
  int leave();
  // Splits the epochs among the processes and finds where the first
  // epoch starts (a mid-epoch checkpoint's step).
  void split();

  const Job& job() const { return job_; }
  bool weighted() const { return sharding_->weighted(); }

  // Trains the epochs left; the process's exit code.
  int train_epochs(const ModelInJob& model);

 private:
  void log_start() const;
  EpochSettings epoch_settings();
  void after_step(const StepRecord& step);
  // Rewrites the trace with the epoch's steps (a collective with --trace).
  void write_trace(const ModelInJob& model);
  // Before each optimizer step: the schedule's rate at it, warmed up.
  void set_lr(int epoch, int64_t optimizer_step);
  void log_skipped_steps(int epoch, const EpochStats& stats) const;
  void log_early_stop(int epoch) const;
  EvalStats evaluate(const ModelInJob& model, const amp::AutocastOptions& autocast) const;

  const TrainerOptions& options_;
  const util::LaunchEnv& env_;
  c10::Device device_;
  torch::nn::Module& module_;
  torch::optim::Optimizer& optimizer_;
  const Dataset& train_;
  // fp16 steps go through a loss scaler, checkpointed with the model.
  std::unique_ptr<amp::GradScaler> scaler_;
  RunCheckpoints checkpoints_;
  EpochReport report_;
  RunTensorBoard tensorboard_;
  RunTrace trace_;
  Job job_;
  int first_epoch_ = 1;
  std::optional<Sharding> sharding_;
  EpochPosition resumed_at_;
  int64_t optimizer_steps_per_epoch_ = 1;  // of the equal split, the same on every rank
};

}  // namespace dtrain::train::detail
