#include "dtrain/train/trainer.h"

#include <utility>

#include <ATen/Parallel.h>

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
}

int Trainer::run(torch::nn::Module& module, torch::optim::Optimizer& optimizer,
                 const Dataset& train, const PutInJob& put_in_job) {
  detail::TrainerRun run(options_, env_, device_, module, optimizer, train);
  run.start(same_settings_, advice_);
  if (run.nothing_left()) {
    return run.leave();
  }
  run.split();
  return run.train_epochs(put_in_job(run.job(), run.weighted()));
}

}  // namespace dtrain::train
