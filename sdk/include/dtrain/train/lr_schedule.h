// The learning rate of each epoch: the rate of one process, scaled with the
// number of processes (LrScaling), then stepped down by a schedule. The
// Trainer sets it on every parameter group before each epoch.
//
//   auto options = TrainerOptions().lr(1e-3).lr_schedule(LrSchedule::step(0.7, 20));
//   LrSchedule::cosine(5).at(scaled_lr(1e-3, LrScaling::kLinear, 2), 3);  // epoch 3 of 5
#pragma once

#include <functional>
#include <string>

#include "dtrain/util/enum_words.h"

namespace dtrain::train {

// How the rate follows the number of processes N, whose global batch is N
// times one process's: kLinear trains at lr * N (Goyal et al.'s linear
// scaling rule: N processes reach one process's accuracy in as many
// epochs), kNone at lr.
enum class LrScaling { kLinear, kNone };
// "linear", "none" (--lr-scaling).
const util::EnumWords<LrScaling>& lr_scaling_words();

// `lr` for `world` processes under `scaling`.
double scaled_lr(double lr, LrScaling scaling, int world);
// For the log: "linear scaling", "not scaled".
std::string scaling_description(LrScaling scaling);

class LrSchedule {
 public:
  // The same rate in every epoch.
  static LrSchedule constant();
  // The rate times `decay` every `every` epochs: rate * decay^floor((epoch
  // - 1) / every), torch's StepLR (PointNet++: x0.7 every 20 epochs).
  // Throws dtrain::Error unless 0 <= decay <= 1 and every > 0.
  static LrSchedule step(double decay, int every);
  // Down from the rate along half a cosine over `epochs`: rate * (1 +
  // cos(pi * (epoch - 1) / epochs)) / 2, the full rate in the first epoch
  // and a small one in the last, so a run of any length ends settled.
  // Throws dtrain::Error unless epochs > 0.
  static LrSchedule cosine(int epochs);

  // The rate of `epoch` (from 1) for a run that starts at `rate`.
  double at(double rate, int epoch) const { return at_(rate, epoch); }
  // For the log, after the rate: "" (constant), "x0.7 every 20 epochs",
  // "down along a cosine over 5 epochs".
  const std::string& description() const { return description_; }

 private:
  LrSchedule(std::function<double(double, int)> at, std::string description)
      : at_(std::move(at)), description_(std::move(description)) {}

  std::function<double(double rate, int epoch)> at_;
  std::string description_;
};

}  // namespace dtrain::train
