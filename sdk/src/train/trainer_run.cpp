#include "trainer_run.h"

#include <chrono>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/lbfgs.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/ddp/broadcast.h"
#include "dtrain/dist/same_settings.h"
#include "dtrain/train/graceful_stop.h"
#include "dtrain/train/labels_fingerprint.h"
#include "dtrain/train/precision.h"
#include "dtrain/util/errors.h"

namespace dtrain::train::detail {

namespace {

// "Adam", "SGD with momentum 0.9": the optimizer, for the log.
std::string optimizer_name(const torch::optim::Optimizer& optimizer) {
  if (const auto* sgd = dynamic_cast<const torch::optim::SGD*>(&optimizer)) {
    const double momentum =
        static_cast<const torch::optim::SGDOptions&>(sgd->defaults()).momentum();
    return momentum > 0 ? fmt::format("SGD with momentum {}", momentum) : "SGD";
  }
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer) != nullptr) {
    return "Adam";
  }
  if (dynamic_cast<const torch::optim::AdamW*>(&optimizer) != nullptr) {
    return "AdamW";
  }
  if (dynamic_cast<const torch::optim::RMSprop*>(&optimizer) != nullptr) {
    return "RMSprop";
  }
  if (dynamic_cast<const torch::optim::Adagrad*>(&optimizer) != nullptr) {
    return "Adagrad";
  }
  if (dynamic_cast<const torch::optim::LBFGS*>(&optimizer) != nullptr) {
    return "LBFGS";
  }
  return "the optimizer";
}

}  // namespace

TrainerRun::TrainerRun(const TrainerOptions& options, const util::LaunchEnv& env,
                       c10::Device device, torch::nn::Module& module,
                       torch::optim::Optimizer& optimizer, const Dataset& train)
    : options_(options),
      env_(env),
      device_(device),
      module_(module),
      optimizer_(optimizer),
      train_(train),
      scaler_(loss_scaler(options.precision())),
      checkpoints_(options, env.rank.value_or(0), module, optimizer, scaler_.get()),
      // Opened before joining the job, so a bad path fails early. A resumed
      // run adds its epochs to the report of the run it continues; a run
      // from epoch 1 starts the report afresh.
      report_(options.csv(), /*writes=*/env.rank.value_or(0) == 0 && !options.csv().empty(),
              EpochReportOptions{.epochs = options.epochs(),
                                 .append = checkpoints_.epochs_done() > 0,
                                 .extra_columns = options.report_columns(),
                                 .best_by = options.best_by(),
                                 .best_lower = options.best_lower(),
                                 .after_row = options.after_report_row()}),
      tensorboard_(options.tensorboard(), /*writes=*/env.rank.value_or(0) == 0),
      trace_(options.trace(), options.trace_steps(), env.rank.value_or(0)) {
  if (!options.checkpoint().empty()) {
    // SIGTERM and SIGINT now stop the run at a step with a checkpoint.
    GracefulStop::install();
  }
}

void TrainerRun::start(const std::vector<dist::Setting>& same_settings, const std::string& advice) {
  job_ = start_job(env_, options_.join(), options_.backend(), options_.dist_timeout_s(), device_);
  // The settings, and the training set each process loaded (a data
  // directory may name another copy on each node): its size and labels.
  if (job_.distributed()) {
    std::vector<dist::Setting> shared = same_settings;
    const std::string& noun = options_.noun();
    shared.push_back({"training " + noun, std::to_string(train_.size())});
    shared.push_back(
        {"training " + noun + "' labels", "fingerprint " + labels_fingerprint(train_.labels())});
    dist::check_same_settings(shared, advice);
  }
  checkpoints_.check_same_resume_point(job_);
  spdlog::info("{}; {} process(es) on {}, {} thread(s) each", train_.summary(), job_.world,
               device_.str(), at::get_num_threads());
  first_epoch_ = static_cast<int>(checkpoints_.epochs_done()) + 1;
}

bool TrainerRun::nothing_left() const {
  return first_epoch_ > options_.epochs() || checkpoints_.early_stop_due();
}

int TrainerRun::leave() {
  if (checkpoints_.early_stop_due()) {
    spdlog::info("{} holds a run stopped early after epoch {}: nothing left to train",
                 options_.checkpoint(), checkpoints_.epochs_done());
  } else {
    spdlog::info("{} already holds {} epochs and --epochs is {}: nothing left to train",
                 options_.checkpoint(), checkpoints_.epochs_done(), options_.epochs());
  }
  finish_job(job_);
  return 0;
}

void TrainerRun::split() {
  sharding_.emplace(options_, train_.size(), job_);
  DTRAIN_CHECK(
      !options_.needs_two_per_process() || sharding_->weighted() || sharding_->equal_samples() >= 2,
      "each of the ", job_.world, " process(es) gets ", sharding_->equal_samples(), " of the ",
      train_.size(), " training ", options_.noun(),
      " per epoch; the model's batch norm needs at least 2 (use more ", options_.noun(),
      " or fewer processes)");
  resumed_at_ = checkpoints_.start(*sharding_, job_);
  const int64_t global_batch = options_.batch_size() * job_.world;
  const int64_t batches = (train_.size() + global_batch - 1) / global_batch;
  tensorboard_.set_steps_per_epoch(batches);
  optimizer_steps_per_epoch_ = (batches + options_.accumulate() - 1) / options_.accumulate();
}

void TrainerRun::log_start() const {
  const double rate = scaled_lr(options_.lr(), options_.lr_scaling(), job_.world);
  const std::string& schedule = options_.lr_schedule().description();
  spdlog::info("{} ({} parameters); precision: {}; {}; {} at learning rate {} ({}){}{}",
               options_.model_name().empty() ? module_.name() : options_.model_name(),
               parameter_count(module_), precision_description(options_.precision(), device_),
               sharding_->summary(), optimizer_name(optimizer_), rate,
               scaling_description(options_.lr_scaling()), schedule.empty() ? "" : ", " + schedule,
               options_.warmup_steps() > 0
                   ? fmt::format(", warmed up over {} steps", options_.warmup_steps())
                   : "");
  if (options_.accumulate() > 1 || options_.clip_grad_norm() > 0) {
    spdlog::info("each optimizer step sums {} batch(es) of {}{}", options_.accumulate(),
                 options_.batch_size(),
                 options_.clip_grad_norm() > 0
                     ? fmt::format(", gradients clipped to norm {}", options_.clip_grad_norm())
                     : "");
  }
}

EpochSettings TrainerRun::epoch_settings() {
  const bool checkpoints = !options_.checkpoint().empty();
  return {.epochs = options_.epochs(),
          .device = device_,
          .autocast = autocast_options(options_.precision(), device_),
          .scaler = scaler_.get(),
          .accumulate = options_.accumulate(),
          .clip_grad_norm = options_.clip_grad_norm(),
          .set_lr = [this](int epoch, int64_t optimizer_step) { set_lr(epoch, optimizer_step); },
          .seed = options_.seed(),
          .loader_workers = options_.loader_workers(),
          .checkpoint_steps = checkpoints ? options_.checkpoint_steps() : 0,
          .save_mid_epoch =
              [this](int epoch, const EpochPosition& position) {
                checkpoints_.save(epoch - 1, position, *sharding_, job_);
              },
          // With a checkpoint there is somewhere to save a stop to.
          .stop_on_signal = checkpoints,
          .after_step = tensorboard_.writes() || trace_.records()
                            ? std::function<void(const StepRecord&)>(
                                  [this](const StepRecord& step) { after_step(step); })
                            : nullptr};
}

void TrainerRun::after_step(const StepRecord& step) {
  if (tensorboard_.writes()) {
    const double lr = optimizer_.param_groups().front().options().get_lr();
    tensorboard_.add_step(
        step, lr, scaler_ ? std::optional<double>(scaler_->get_scale()) : std::nullopt, job_.world);
  }
  trace_.add_step(step);
}

void TrainerRun::write_trace(const ModelInJob& model) {
  if (trace_.records()) {
    trace_.add_communication(model.timeline());
    trace_.write(job_);
  }
}

void TrainerRun::set_lr(int epoch, int64_t optimizer_step) {
  const LrPoint point{
      .epoch = epoch, .step = optimizer_step, .steps_per_epoch = optimizer_steps_per_epoch_};
  const double rate =
      options_.lr_schedule().at(scaled_lr(options_.lr(), options_.lr_scaling(), job_.world),
                                point) *
      warmup_factor(point.run_step(), options_.warmup_steps(), options_.warmup_start_factor());
  for (auto& group : optimizer_.param_groups()) {
    group.options().set_lr(rate);
  }
}

void TrainerRun::log_skipped_steps(int epoch, const EpochStats& stats) const {
  if (stats.skipped_steps > 0 && job_.rank == 0) {
    spdlog::warn(
        "epoch {}: the loss scaler skipped {} optimizer step(s) whose gradients overflowed", epoch,
        stats.skipped_steps);
  }
}

void TrainerRun::log_early_stop(int epoch) const {
  if (job_.rank == 0) {
    const std::vector<int> best = checkpoints_.best_epochs().best(1);
    spdlog::info(
        "stopping early after epoch {}: {} has not improved{} for {} epoch(s), since "
        "epoch {}",
        epoch, options_.best_by(),
        options_.early_stop_min_delta() > 0
            ? fmt::format(" by more than {}", options_.early_stop_min_delta())
            : "",
        options_.early_stop_patience(), best.empty() ? 0 : best.front());
  }
}

EvalStats evaluate_once(torch::nn::Module& module, const amp::AutocastOptions& autocast,
                        const EvalContext& context,
                        const std::function<EvalStats(const EvalContext&)>& evaluate) {
  module.eval();
  torch::NoGradGuard no_grad;
  amp::AutocastGuard autocast_guard(autocast);
  return evaluate(context);
}

EvalStats TrainerRun::evaluate(const ModelInJob& model,
                               const amp::AutocastOptions& autocast) const {
  // Each rank's buffers (batch norm's running statistics) followed its own
  // shard; the checkpoint keeps rank 0's. Every rank takes rank 0's first,
  // as DDP's broadcast_buffers does before a forward, so the reported
  // figures are those of the saved model: --eval-only reproduces them.
  if (job_.distributed()) {
    ddp::broadcast_tensors(module_.buffers(), /*root=*/0);
  }
  return evaluate_once(module_, autocast, EvalContext(job_, options_.eval_batch()), model.evaluate);
}

int TrainerRun::train_epochs(const ModelInJob& model) {
  log_start();
  const EpochSettings settings = epoch_settings();
  const EpochLoop loop({.module = &module_,
                        .optimizer = &optimizer_,
                        .loss = model.loss,
                        .join = model.join,
                        .no_sync = model.no_sync},
                       train_, settings, job_);
  const auto job_start = std::chrono::steady_clock::now();
  EvalStats eval;
  int last_epoch = options_.epochs();
  for (int epoch = first_epoch_; epoch <= last_epoch; ++epoch) {
    const EpochStats stats =
        loop.train(*sharding_, epoch, epoch == first_epoch_ ? resumed_at_ : EpochPosition{});
    write_trace(model);  // before comm(), which clears DDP's timeline
    if (stats.stop_signal != 0) {
      return checkpoints_.stopped(stats.stop_signal, epoch - 1, stats.stopped_after, job_);
    }
    log_skipped_steps(epoch, stats);
    const CommStats comm = model.comm();
    eval = evaluate(model, settings.autocast);
    // The row before the checkpoint: a crash between the two repeats the
    // epoch on resume (its row then appears twice) rather than losing it.
    tensorboard_.add_epoch(epoch, report_.record(epoch, stats, eval, comm));
    checkpoints_.record_epoch(epoch, eval);
    if (checkpoints_.early_stop_due() && epoch < last_epoch) {
      log_early_stop(epoch);
      last_epoch = epoch;
    }
    if (epoch < last_epoch) {  // (auto: the next epoch's split, kept in the checkpoint)
      sharding_->measure(stats, comm, job_);
    }
    checkpoints_.save(epoch, EpochPosition{}, *sharding_, job_);
    if (settings.stop_on_signal && epoch < last_epoch) {
      if (const int sig = agreed_stop_signal(job_)) {
        return checkpoints_.stopped(sig, epoch, 0, job_);
      }
    }
  }
  checkpoints_.finish();
  report_.finish(
      eval, last_epoch,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - job_start).count(),
      job_.world);
  finish_job(job_);
  return 0;
}

}  // namespace dtrain::train::detail
