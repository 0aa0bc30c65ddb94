// The whole run of a PointNet++ training app -- optimizer, resume, report,
// job, the epochs with their schedule, evaluation and checkpoints -- for
// any model (train_pointnet2's classifier, train_partseg's segmenter). An
// app builds its data and model, says how a batch's loss and an evaluation
// are computed (PointNet2Task), and calls run_pointnet2_training.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/optim/adam.h>

#include "dtrain/train/checkpoint.h"
#include "dtrain/util/launch_env.h"
#include "epoch_report.h"
#include "job_model.h"
#include "pointnet2_recipe.h"
#include "sharding.h"
#include "training_job.h"
#include "training_loop.h"

namespace dtrain::apps {

template <typename ModuleHolder>
struct PointNet2Task {
  ModuleHolder model;        // already on the job's device
  std::string model_name;    // for the log: "PointNet++ ssg-lite"
  std::string data_summary;  // for the log: what was loaded, from where
  int64_t train_size = 0;    // training samples, for the sampler
  int64_t eval_batch = 64;
  std::vector<std::string> extra_columns;  // EvalStats::extra's names in the report
  // How training batches are made and scored, given the model in the job
  // (DDP when distributed).
  std::function<TrainBatches(JobModel<ModuleHolder>&)> train_batches;
  std::function<EvalStats(JobModel<ModuleHolder>&, const LoopSettings&, const Job&)> evaluate;
};

template <typename ModuleHolder>
int run_pointnet2_training(const PointNet2RecipeOptions& options, const util::LaunchEnv& env,
                           c10::Device device, PointNet2Task<ModuleHolder> task) {
  ModuleHolder& model = task.model;
  // fp16 steps go through a loss scaler, checkpointed with the model.
  const auto scaler = make_loss_scaler(options);
  // The rate is set at the start of every epoch (set_adam_lr).
  torch::optim::Adam optimizer(
      model->parameters(),
      torch::optim::AdamOptions(options.lr).weight_decay(options.weight_decay));
  if (!options.checkpoint.empty() && env.rank.value_or(0) == 0) {
    train::check_checkpoint_path(options.checkpoint);  // the writer's: before any training
  }
  const int64_t epochs_done = resume_from_checkpoint(options, *model, optimizer, scaler.get());
  // Opened before joining the job, so a bad path fails early. A resumed run
  // adds its epochs to the report of the run it continues; a run from epoch
  // 1 starts the report afresh.
  EpochReport report(options.csv, /*writes=*/env.rank.value_or(0) == 0, options.epochs,
                     /*append=*/epochs_done > 0, task.extra_columns);
  const Job job = start_job(env, options.backend, options.dist_timeout_s, device);
  check_same_resume_point(job, epochs_done);
  spdlog::info("{}; {} process(es) on {}, {} thread(s) each", task.data_summary, job.world,
               device.str(), at::get_num_threads());
  const int first_epoch = static_cast<int>(epochs_done) + 1;
  if (first_epoch > options.epochs) {
    spdlog::info("{} already holds {} epochs and --epochs is {}: nothing left to train",
                 options.checkpoint, epochs_done, options.epochs);
    finish_job(job);
    return 0;
  }
  Sharding sharding(options, task.train_size, job, "clouds");
  JobModel<ModuleHolder> job_model(model, job, /*sample_count=*/sharding.weighted());
  // Batch norm cannot train on one cloud; a process whose share of the
  // epoch is a single cloud would fail at its first step. (Weighted splits
  // check their shares themselves.)
  DTRAIN_CHECK(sharding.weighted() || sharding.equal_samples() >= 2, "each of the ", job.world,
               " process(es) gets ", sharding.equal_samples(), " of the ", task.train_size,
               " training cloud(s) per epoch; PointNet++'s batch norm needs at least 2 (use more "
               "clouds or fewer processes)");
  spdlog::info("{} ({} parameters); precision {}; {}; Adam at {} ({}), x{} every {} epochs",
               task.model_name, parameter_count(*model), precision_name(options),
               sharding.summary(), options.scaled_lr(job.world), options.lr_scaling_words(),
               options.lr_decay, options.lr_step);

  const LoopSettings settings = loop_settings(options, job, task.eval_batch, scaler.get());
  const auto job_start = std::chrono::steady_clock::now();
  EvalStats eval;
  for (int epoch = first_epoch; epoch <= options.epochs; ++epoch) {
    set_adam_lr(optimizer, lr_at(options, job.world, epoch));
    const EpochStats stats = train_epoch(*model, optimizer, sharding, settings, epoch, job,
                                         task.train_batches(job_model), job_model.join());
    const CommStats comm = job_model.take_comm_stats();
    eval = task.evaluate(job_model, settings, job);
    // The row before the checkpoint: a crash between the two repeats the
    // epoch on resume (its row then appears twice) rather than losing it.
    report.record(epoch, stats, eval, comm);
    if (!options.checkpoint.empty() && job.rank == 0) {
      train::save_checkpoint(options.checkpoint, *model, optimizer, epoch, scaler.get());
    }
    if (epoch < options.epochs) {  // (auto: the next epoch's split)
      sharding.measure(stats, comm, job);
    }
  }
  report.finish(eval,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - job_start).count(),
                job.world);
  finish_job(job);
  return 0;
}

}  // namespace dtrain::apps
