#include "dtrain/train/trainer.h"

#include <utility>

#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>

#include "atomic_write.h"
#include "dtrain/amp/autocast.h"
#include "dtrain/dist/same_settings.h"
#include "dtrain/train/checkpoint.h"
#include "dtrain/train/epoch_report.h"
#include "dtrain/train/flag_table.h"
#include "dtrain/train/precision.h"
#include "dtrain/train/run_config.h"
#include "dtrain/train/state_dict.h"
#include "dtrain/util/errors.h"
#include "trainer_run.h"

namespace dtrain::train {

Trainer::Trainer(TrainerOptions options) : options_(std::move(options)), device_(c10::kCPU) {
  if (const auto problem = option_problem(options_)) {
    throw Error(problem->flag + ": " + problem->message);
  }
  if (options_.threads() > 0) {
    at::set_num_threads(options_.threads());
  }
  env_ = launch_env(options_.join());
  // First: a missing GPU is named before any data is read.
  device_ = choose_device(env_, options_.device());
}

Trainer::Trainer(TrainerOptions options, const FlagTable& flags) : Trainer(std::move(options)) {
  same_settings_ = flags.same_settings();
  advice_ = flags.advice();
  // The run's flags beside its report, which --config replays (run_config.h).
  if (env_.rank.value_or(0) == 0) {
    write_run_config(flags, options_.csv());
  }
}

namespace {

// --init-weights, on every rank before the job starts (a file that does not
// fit fails at once, and nothing trains); a checkpoint resumed from
// replaces these weights later.
void load_initial_weights(const TrainerOptions& options, torch::nn::Module& module) {
  if (options.init_weights().empty()) {
    return;
  }
  const LoadStateDictReport report = load_state_dict(module, options.init_weights(),
                                                     LoadStateDictOptions()
                                                         .entry(options.init_weights_entry())
                                                         .strict(!options.init_weights_partial()));
  spdlog::info(
      "initial weights from {}{}", options.init_weights(),
      report.complete()
          ? ""
          : fmt::format(" (partly: {} of the model's tensors left at their initial values)",
                        report.missing.size() + report.mismatched.size()));
}

}  // namespace

int Trainer::run(torch::nn::Module& module, torch::optim::Optimizer& optimizer,
                 const Dataset& train, const PutInJob& put_in_job) {
  const bool exports = env_.rank.value_or(0) == 0 && !options_.export_weights().empty();
  if (exports) {
    detail::check_writable(options_.export_weights(), "state dict");  // before any training
  }
  load_initial_weights(options_, module);
  detail::TrainerRun run(options_, env_, device_, module, optimizer, train);
  run.start(same_settings_, advice_);
  int code = 0;
  if (run.nothing_left()) {
    code = run.leave();
  } else {
    run.split();
    code = run.train_epochs(put_in_job(run.job(), run.weighted()));
  }
  if (code == 0 && exports) {  // not after a stop by a signal: training is not over
    save_state_dict(module, options_.export_weights());
    spdlog::info("trained weights for PyTorch in {}", options_.export_weights());
  }
  return code;
}

CheckpointEval Trainer::run_evaluation(
    torch::nn::Module& module, const std::function<EvalStats(const EvalContext&)>& evaluate) {
  const std::string& path = options_.checkpoint();
  DTRAIN_CHECK(!path.empty(), "evaluating a checkpoint needs --checkpoint: the file to evaluate");
  // Every rank reads it, before joining: a missing file fails at once.
  const TrainingProgress progress = load_model_checkpoint(path, module);
  const Job job =
      start_job(env_, options_.join(), options_.backend(), options_.dist_timeout_s(), device_);
  if (job.distributed()) {
    std::vector<dist::Setting> shared = same_settings_;
    shared.push_back({"the checkpoint's epochs and steps",
                      fmt::format("{} and {}", progress.epochs_done, progress.steps_done)});
    dist::check_same_settings(shared, advice_);
  }
  spdlog::info("evaluating {} (after epoch {}{}) on {} process(es) on {}", path,
               progress.epochs_done,
               progress.steps_done > 0 ? fmt::format(" and {} steps", progress.steps_done) : "",
               job.world, device_.str());
  const CheckpointEval result{
      .epochs_done = progress.epochs_done,
      .steps_done = progress.steps_done,
      .stats = detail::evaluate_once(module, autocast_options(options_.precision(), device_),
                                     EvalContext(job, options_.eval_batch()), evaluate)};
  if (job.rank == 0) {
    spdlog::info("evaluated {}: {}", path, eval_words(result.stats, options_.report_columns()));
  }
  finish_job(job);
  return result;
}

}  // namespace dtrain::train
