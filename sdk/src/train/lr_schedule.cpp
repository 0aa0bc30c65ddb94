#include "dtrain/train/lr_schedule.h"

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

LrSchedule LrSchedule::constant() {
  return {[](double rate, int /*epoch*/) { return rate; }, ""};
}

LrSchedule LrSchedule::step(double decay, int every) {
  DTRAIN_CHECK(decay >= 0 && decay <= 1, "LrSchedule::step: decay must be in [0, 1], got ", decay);
  DTRAIN_CHECK(every > 0, "LrSchedule::step: every must be positive, got ", every);
  return {[decay, every](double rate, int epoch) {
            return rate * std::pow(decay, (epoch - 1) / every);
          },
          fmt::format("x{} every {} epochs", decay, every)};
}

LrSchedule LrSchedule::cosine(int epochs) {
  DTRAIN_CHECK(epochs > 0, "LrSchedule::cosine: epochs must be positive, got ", epochs);
  return {[epochs](double rate, int epoch) {
            const double done = static_cast<double>(epoch - 1) / epochs;  // of the run, in [0, 1)
            return rate * 0.5 * (1.0 + std::cos(std::numbers::pi * done));
          },
          fmt::format("down along a cosine over {} epochs", epochs)};
}

}  // namespace dtrain::train
