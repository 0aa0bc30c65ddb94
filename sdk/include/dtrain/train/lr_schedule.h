// The learning rate of each optimizer step: the rate of one process, scaled
// with the number of processes (LrScaling), then shaped by a schedule and
// a linear warmup. The Trainer sets it on every parameter group before
// each optimizer step.
//
//   auto options = TrainerOptions().lr(1e-3).lr_schedule(LrSchedule::cosine(20)).warmup_steps(100);
//   LrSchedule::cosine(5).at(scaled_lr(1e-3, LrScaling::kLinear, 2), 3);  // epoch 3 of 5
#pragma once

#include <cstdint>
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

// Where an optimizer step lies in the run, for a schedule: the epoch (from
// 1), the optimizer steps already taken in it, and an epoch's optimizer
// steps (the same on every rank: the equal split's).
struct LrPoint {
  int epoch = 1;
  int64_t step = 0;
  int64_t steps_per_epoch = 1;
  // Epochs done, fractional: (epoch - 1) + step / steps_per_epoch.
  double epochs_done() const;
  // Optimizer steps of the run before this one.
  int64_t run_step() const { return (epoch - 1) * steps_per_epoch + step; }
};

class LrSchedule {
 public:
  // The same rate in every step.
  static LrSchedule constant();
  // The rate times `decay` every `every` epochs: rate * decay^floor((epoch
  // - 1) / every), torch's StepLR (PointNet++: x0.7 every 20 epochs).
  // Throws dtrain::Error unless 0 <= decay <= 1 and every > 0.
  static LrSchedule step(double decay, int every);
  // Down from the rate along half a cosine over `epochs`, step by step:
  // rate * (min + (1 - min) * (1 + cos(pi * epochs_done / epochs)) / 2),
  // the full rate at the first step and `min_factor` times it at the end,
  // so a run of any length ends settled. Throws dtrain::Error unless
  // epochs > 0 and 0 <= min_factor <= 1.
  static LrSchedule cosine(int epochs, double min_factor = 0);
  // The user's own: `at(rate, point)` is the rate of the step at `point`.
  static LrSchedule custom(std::function<double(double rate, const LrPoint& point)> at,
                           std::string description);

  // The rate of the step at `point` for a run that starts at `rate`.
  double at(double rate, const LrPoint& point) const { return at_(rate, point); }
  // The rate of the first step of `epoch` (from 1).
  double at(double rate, int epoch) const { return at_(rate, LrPoint{.epoch = epoch}); }
  // For the log, after the rate: "" (constant), "x0.7 every 20 epochs",
  // "down along a cosine over 5 epochs".
  const std::string& description() const { return description_; }

 private:
  LrSchedule(std::function<double(double, const LrPoint&)> at, std::string description)
      : at_(std::move(at)), description_(std::move(description)) {}

  std::function<double(double rate, const LrPoint& point)> at_;
  std::string description_;
};

// Linear warmup (Goyal et al.): the factor on a schedule's rate at the
// run's optimizer step `run_step` (from 0), rising from `start_factor` at
// the first step to 1 at step `warmup_steps`, and 1 from there on (torch's
// LinearLR). 1 when warmup_steps is 0.
double warmup_factor(int64_t run_step, int64_t warmup_steps, double start_factor);

}  // namespace dtrain::train
