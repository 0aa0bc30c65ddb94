// One optimizer step on a batch already on the job's device: the gradients
// zeroed, the loss under the run's autocast, its backward, then the loss
// scaler's step (fp16: a step whose gradients overflowed is skipped and the
// scale backs off) or, without one, the check that the gradients are
// finite before the optimizer's step. Every rank holds the same
// all-reduced gradients, so every rank of a diverged run stops at the same
// step, the step not taken.
#pragma once

#include <cstdint>

#include <torch/optim/optimizer.h>

#include "dtrain/train/dataset.h"
#include "dtrain/train/train_epoch.h"

namespace dtrain::train::detail {

// Returns the batch's loss, detached, where the step computed it (on a GPU,
// reading it waits for the step); with `times`, also its value and the
// times of the forward, backward, optimizer and end. Throws dtrain::Error
// naming the epoch and step (`step` from 0) when the gradients hold NaN or
// infinite values: the one read of the device a step makes (fp32; fp16
// steps go through the loss scaler, which reads whether they overflowed).
at::Tensor take_step(torch::optim::Optimizer& optimizer, const LossFn& loss, const Batch& batch,
                     const EpochSettings& settings, int epoch, int64_t step,
                     StepRecord* times = nullptr);

}  // namespace dtrain::train::detail
