// An app's optimizer and its learning-rate schedule, which the shared
// training run sets before every epoch (the rate depends on the number of
// processes, known only once the job has started).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <torch/optim/optimizer.h>

namespace dtrain::apps {

struct TrainingOptimizer {
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  // The rate of `epoch` (from 1) with `world` processes.
  std::function<double(int world, int epoch)> lr_at;
  // For the log: the optimizer and its schedule with `world` processes
  // ("Adam at 0.002 (linear scaling), x0.7 every 20 epochs").
  std::function<std::string(int world)> summary;

  // Sets every parameter group's rate to lr_at(world, epoch).
  void set_lr(int world, int epoch) const {
    const double lr = lr_at(world, epoch);
    for (auto& group : optimizer->param_groups()) {
      group.options().set_lr(lr);
    }
  }
};

}  // namespace dtrain::apps
