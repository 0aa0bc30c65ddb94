// The whole run of a training app -- resume, report, job, the epochs with
// their learning rates, evaluation and checkpoints -- for any model. An
// app loads its data, builds its model and optimizer, says how a batch's
// loss and an evaluation are computed (TrainingTask), and calls
// run_training.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include "dtrain/dist/same_settings.h"
#include "dtrain/train/graceful_stop.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/launch_env.h"
#include "epoch_report.h"
#include "job_model.h"
#include "labels_fingerprint.h"
#include "run_checkpoints.h"
#include "sharding.h"
#include "train_flags.h"
#include "training_job.h"
#include "training_loop.h"
#include "training_optimizer.h"

namespace dtrain::apps {

template <typename ModuleHolder>
struct TrainingTask {
  ModuleHolder model;        // already on the job's device
  std::string model_name;    // for the log: "PointNet++ ssg-lite"
  std::string data_summary;  // for the log: what was loaded, from where
  std::string noun;          // a training sample in logs: "clouds", "images"
  int64_t train_size = 0;    // training samples, for the sampler
  // The training set's labels (integer tensors), whose fingerprint the
  // processes of a job compare (labels_fingerprint.h).
  std::vector<at::Tensor> train_labels;
  // Batch norm cannot train on one sample: each process's share of an
  // epoch must hold at least 2 (the weighted splits check theirs).
  bool needs_two_per_process = true;
  int64_t eval_batch = 64;
  std::vector<std::string> extra_columns;  // EvalStats::extra's names in the report
  // The flags every process must be given alike (shared_settings).
  std::vector<dist::Setting> shared_settings;
  TrainingOptimizer optimizer;  // over the model's parameters
  // How training batches are made and scored, given the model in the job
  // (DDP when distributed).
  std::function<TrainBatches(JobModel<ModuleHolder>&)> train_batches;
  std::function<EvalStats(JobModel<ModuleHolder>&, const LoopSettings&, const Job&)> evaluate;
};

template <typename ModuleHolder>
int run_training(const CommonTrainOptions& options, const util::LaunchEnv& env, c10::Device device,
                 TrainingTask<ModuleHolder> task) {
  ModuleHolder& model = task.model;
  torch::optim::Optimizer& optimizer = *task.optimizer.optimizer;
  // fp16 steps go through a loss scaler, checkpointed with the model.
  const auto scaler = make_loss_scaler(options);
  RunCheckpoints checkpoints(options, env.rank.value_or(0), *model, optimizer, scaler.get());
  if (!options.checkpoint.empty()) {
    // SIGTERM and SIGINT now stop the run at a step with a checkpoint.
    train::GracefulStop::install();
  }
  // Opened before joining the job, so a bad path fails early. A resumed run
  // adds its epochs to the report of the run it continues; a run from epoch
  // 1 starts the report afresh.
  EpochReport report(options.csv, /*writes=*/env.rank.value_or(0) == 0, options.epochs,
                     /*append=*/checkpoints.epochs_done() > 0, task.extra_columns);
  const Job job = start_job(env, options.join, options.backend, options.dist_timeout_s, device);
  // The flags, and the training set each process loaded (--data-dir may
  // name another copy on each node): its size and its labels.
  if (job.distributed()) {
    std::vector<dist::Setting> shared = task.shared_settings;
    shared.push_back({"training " + task.noun, std::to_string(task.train_size)});
    shared.push_back({"training " + task.noun + "' labels",
                      "fingerprint " + labels_fingerprint(task.train_labels)});
    dist::check_same_settings(shared, kSameFlagsAdvice);
  }
  checkpoints.check_same_resume_point(job);
  spdlog::info("{}; {} process(es) on {}, {} thread(s) each", task.data_summary, job.world,
               device.str(), at::get_num_threads());
  const int first_epoch = static_cast<int>(checkpoints.epochs_done()) + 1;
  if (first_epoch > options.epochs) {
    spdlog::info("{} already holds {} epochs and --epochs is {}: nothing left to train",
                 options.checkpoint, checkpoints.epochs_done(), options.epochs);
    finish_job(job);
    return 0;
  }
  Sharding sharding(options, task.train_size, job, task.noun);
  JobModel<ModuleHolder> job_model(model, job, /*sample_count=*/sharding.weighted());
  DTRAIN_CHECK(!task.needs_two_per_process || sharding.weighted() || sharding.equal_samples() >= 2,
               "each of the ", job.world, " process(es) gets ", sharding.equal_samples(),
               " of the ", task.train_size, " training ", task.noun,
               " per epoch; the model's batch norm needs at least 2 (use more ", task.noun,
               " or fewer processes)");
  const EpochPosition resumed_at = checkpoints.start(sharding, job);
  spdlog::info("{} ({} parameters); precision: {}; {}; {}", task.model_name,
               parameter_count(*model), precision_name(options), sharding.summary(),
               task.optimizer.summary(job.world));

  LoopSettings settings = loop_settings(options, job, task.eval_batch, scaler.get());
  settings.save_mid_epoch = [&](int epoch, const EpochPosition& position) {
    checkpoints.save(epoch - 1, position, sharding, job);
  };
  const auto job_start = std::chrono::steady_clock::now();
  EvalStats eval;
  for (int epoch = first_epoch; epoch <= options.epochs; ++epoch) {
    task.optimizer.set_lr(job.world, epoch);
    const EpochStats stats = train_epoch(*model, optimizer, sharding, settings, epoch, job,
                                         task.train_batches(job_model), job_model.join(),
                                         epoch == first_epoch ? resumed_at : EpochPosition{});
    if (stats.stop_signal != 0) {
      return checkpoints.stopped(stats.stop_signal, epoch - 1, stats.stopped_after, job);
    }
    const CommStats comm = job_model.take_comm_stats();
    eval = task.evaluate(job_model, settings, job);
    // The row before the checkpoint: a crash between the two repeats the
    // epoch on resume (its row then appears twice) rather than losing it.
    report.record(epoch, stats, eval, comm);
    if (epoch < options.epochs) {  // (auto: the next epoch's split, kept in the checkpoint)
      sharding.measure(stats, comm, job);
    }
    checkpoints.save(epoch, EpochPosition{}, sharding, job);
    if (settings.stop_on_signal && epoch < options.epochs) {
      if (const int sig = agreed_stop_signal(job)) {
        return checkpoints.stopped(sig, epoch, 0, job);
      }
    }
  }
  checkpoints.finish();
  report.finish(eval,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - job_start).count(),
                job.world);
  finish_job(job);
  return 0;
}

}  // namespace dtrain::apps
