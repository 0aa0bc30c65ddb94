#include "training_step.h"

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

double take_step(torch::optim::Optimizer& optimizer, const LossFn& loss_of, const Batch& batch,
                 const EpochSettings& settings, int epoch, int64_t step) {
  optimizer.zero_grad();
  at::Tensor loss;
  {
    amp::AutocastGuard autocast(settings.autocast);
    loss = loss_of(batch);
  }
  if (settings.scaler != nullptr) {
    settings.scaler->scale(loss).backward();
    settings.scaler->step(optimizer);
    settings.scaler->update();
  } else {
    loss.backward();
    // Non-finite gradients would make every parameter NaN (a scaler,
    // above, skips such steps instead).
    DTRAIN_CHECK(gradients_are_finite(optimizer), "epoch ", epoch, ", step ", step + 1,
                 ": the gradients hold NaN or infinite values (this process's loss: ",
                 loss_text(loss.item<double>()),
                 "): training diverged, and the step was not taken; try a lower --lr");
    optimizer.step();
  }
  return loss.item<double>();
}

}  // namespace dtrain::train::detail
