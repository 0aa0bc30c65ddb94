#include "dtrain/train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "dtrain/util/errors.h"

namespace dtrain::train {

const util::EnumWords<LrScaling>& lr_scaling_words() {
  static const util::EnumWords<LrScaling> words{{"linear", LrScaling::kLinear},
                                                {"none", LrScaling::kNone}};
  return words;
}

double scaled_lr(double lr, LrScaling scaling, int world) {
  return scaling == LrScaling::kLinear ? lr * world : lr;
}

std::string scaling_description(LrScaling scaling) {
  return scaling == LrScaling::kLinear ? "linear scaling" : "not scaled";
}

double LrPoint::epochs_done() const {
  return (epoch - 1) + static_cast<double>(step) / static_cast<double>(steps_per_epoch);
}

LrSchedule LrSchedule::constant() {
  return {[](double rate, const LrPoint& /*point*/) { return rate; }, ""};
}

LrSchedule LrSchedule::step(double decay, int every) {
  DTRAIN_CHECK(decay >= 0 && decay <= 1, "LrSchedule::step: decay must be in [0, 1], got ", decay);
  DTRAIN_CHECK(every > 0, "LrSchedule::step: every must be positive, got ", every);
  return {[decay, every](double rate, const LrPoint& point) {
            return rate * std::pow(decay, (point.epoch - 1) / every);
          },
          fmt::format("x{} every {} epochs", decay, every)};
}

LrSchedule LrSchedule::cosine(int epochs, double min_factor) {
  DTRAIN_CHECK(epochs > 0, "LrSchedule::cosine: epochs must be positive, got ", epochs);
  DTRAIN_CHECK(min_factor >= 0 && min_factor <= 1,
               "LrSchedule::cosine: min_factor must be in [0, 1], got ", min_factor);
  return {
      [epochs, min_factor](double rate, const LrPoint& point) {
        const double done = std::min(point.epochs_done() / epochs, 1.0);  // of the run
        return rate *
               (min_factor + (1 - min_factor) * 0.5 * (1.0 + std::cos(std::numbers::pi * done)));
      },
      min_factor > 0 ? fmt::format("down along a cosine over {} epochs to x{}", epochs, min_factor)
                     : fmt::format("down along a cosine over {} epochs", epochs)};
}

LrSchedule LrSchedule::custom(std::function<double(double rate, const LrPoint& point)> at,
                              std::string description) {
  DTRAIN_CHECK(static_cast<bool>(at), "LrSchedule::custom: no function given");
  return {std::move(at), std::move(description)};
}

double warmup_factor(int64_t run_step, int64_t warmup_steps, double start_factor) {
  if (run_step >= warmup_steps) {
    return 1.0;
  }
  return start_factor +
         (1 - start_factor) * static_cast<double>(run_step) / static_cast<double>(warmup_steps);
}

}  // namespace dtrain::train
