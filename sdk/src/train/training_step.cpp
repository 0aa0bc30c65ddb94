#include "training_step.h"

#include <chrono>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/train/finite_gradients.h"
#include "dtrain/train/gradient_clipping.h"
#include "dtrain/util/errors.h"
#include "step_sync_debug.h"

namespace dtrain::train::detail {

namespace {

// "NaN" for either sign of NaN, "inf", "1.2009".
std::string loss_text(double loss) {
  return std::isnan(loss) ? "NaN" : fmt::format("{:g}", loss);
}

// The optimizer's step once the step's gradients are summed: through the
// scaler (which may skip it), or checked finite; clipped first when asked.
// Returns whether the scaler skipped it.
bool step_optimizer(torch::optim::Optimizer& optimizer, const at::Tensor& loss,
                    const EpochSettings& settings, int epoch, int64_t step, const char*& phase) {
  const bool clips = settings.clip_grad_norm > 0;
  if (settings.scaler != nullptr) {
    if (clips) {
      phase = "loss scaler's unscale and clipping";
      settings.scaler->unscale_(optimizer);  // clip the true gradients
      clip_gradient_norm(optimizer, settings.clip_grad_norm);
    }
    phase = "loss scaler's step (its check for inf and NaN)";
    const bool stepped = settings.scaler->step(optimizer);
    settings.scaler->update();
    return !stepped;
  }
  // Non-finite gradients would make every parameter NaN (a scaler, above,
  // skips such steps instead).
  phase = "NaN guard (gradients_are_finite)";
  DTRAIN_CHECK(gradients_are_finite(optimizer), "epoch ", epoch, ", step ", step + 1,
               ": the gradients hold NaN or infinite values (this process's loss: ",
               loss_text(loss.item<double>()),
               "): training diverged, and the step was not taken; try a lower --lr");
  if (clips) {
    phase = "gradient clipping";
    clip_gradient_norm(optimizer, settings.clip_grad_norm);
  }
  phase = "optimizer's step";
  optimizer.step();
  return false;
}

// take_step's work, its phase named in `phase` as it goes.
BatchResult run_step(const EpochModel& model, const Batch& batch, const EpochSettings& settings,
                     int epoch, int64_t step, const MicroBatch& micro, StepRecord* times,
                     const char*& phase) {
  torch::optim::Optimizer& optimizer = *model.optimizer;
  auto now = [times](StepRecord::Time StepRecord::*phase) {
    if (times != nullptr) {
      times->*phase = std::chrono::steady_clock::now();
    }
  };
  if (micro.first) {
    optimizer.zero_grad();
  }
  at::Tensor loss;
  auto forward_backward = [&] {
    now(&StepRecord::forward);
    phase = "forward";
    {
      amp::AutocastGuard autocast(settings.autocast);
      loss = model.loss(batch);
    }
    now(&StepRecord::backward);
    phase = "backward";
    const at::Tensor weighted = micro.weight == 1 ? loss : loss * micro.weight;
    (settings.scaler != nullptr ? settings.scaler->scale(weighted) : weighted).backward();
  };
  if (!micro.last && model.no_sync) {
    model.no_sync(forward_backward);  // DDP all-reduces the step's last batch only
  } else {
    forward_backward();
  }
  now(&StepRecord::optimizer);
  const bool skipped = micro.last && step_optimizer(optimizer, loss, settings, epoch, step, phase);
  // The loss stays where it is: reading it waits for the step's last
  // kernel, which a timed step does (its end is then the step's end).
  at::Tensor value = loss.detach();
  if (times != nullptr) {
    phase = "timing (--trace, --tensorboard read the loss)";
    times->loss = value.item<double>();
    now(&StepRecord::end);
  }
  return {.loss = value, .skipped = skipped};
}

}  // namespace

BatchResult take_step(const EpochModel& model, const Batch& batch, const EpochSettings& settings,
                      int epoch, int64_t step, const MicroBatch& micro, StepRecord* times) {
  // Note [A step without host syncs] (step_sync_debug.h).
  const StepSyncDebug sync_debug(settings.device);
  const char* phase = "start";
  try {
    return run_step(model, batch, settings, epoch, step, micro, times, phase);
  } catch (const std::exception& e) {
    if (!StepSyncDebug::is_sync_error(e)) {
      throw;
    }
    throw Error(fmt::format(
        "epoch {}, step {}: the step's {} synchronized the host with the GPU "
        "(DTRAIN_CUDA_SYNC_DEBUG=error): {}",
        epoch, step + 1, phase, std::string(e.what()).substr(0, std::string(e.what()).find('\n'))));
  }
}

}  // namespace dtrain::train::detail
