#include "training_step.h"

#include <chrono>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/train/finite_gradients.h"
#include "dtrain/util/errors.h"

namespace dtrain::train::detail {

namespace {

// "NaN" for either sign of NaN, "inf", "1.2009".
std::string loss_text(double loss) {
  return std::isnan(loss) ? "NaN" : fmt::format("{:g}", loss);
}

}  // namespace

at::Tensor take_step(torch::optim::Optimizer& optimizer, const LossFn& loss_of, const Batch& batch,
                     const EpochSettings& settings, int epoch, int64_t step, StepRecord* times) {
  auto now = [times](StepRecord::Time StepRecord::*phase) {
    if (times != nullptr) {
      times->*phase = std::chrono::steady_clock::now();
    }
  };
  optimizer.zero_grad();
  now(&StepRecord::forward);
  at::Tensor loss;
  {
    amp::AutocastGuard autocast(settings.autocast);
    loss = loss_of(batch);
  }
  now(&StepRecord::backward);
  if (settings.scaler != nullptr) {
    settings.scaler->scale(loss).backward();
    now(&StepRecord::optimizer);
    settings.scaler->step(optimizer);
    settings.scaler->update();
  } else {
    loss.backward();
    now(&StepRecord::optimizer);
    // Non-finite gradients would make every parameter NaN (a scaler,
    // above, skips such steps instead).
    DTRAIN_CHECK(gradients_are_finite(optimizer), "epoch ", epoch, ", step ", step + 1,
                 ": the gradients hold NaN or infinite values (this process's loss: ",
                 loss_text(loss.item<double>()),
                 "): training diverged, and the step was not taken; try a lower --lr");
    optimizer.step();
  }
  // The loss stays where it is: reading it waits for the step's last
  // kernel, which a timed step does (its end is then the step's end).
  at::Tensor value = loss.detach();
  if (times != nullptr) {
    times->loss = value.item<double>();
    now(&StepRecord::end);
  }
  return value;
}

}  // namespace dtrain::train::detail
