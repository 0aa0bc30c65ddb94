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

// Returns the batch's loss; sets the times of the forward, backward,
// optimizer and end in `times` when given. Throws dtrain::Error naming the
// epoch and step (`step` from 0) when the gradients hold NaN or infinite
// values.
double take_step(torch::optim::Optimizer& optimizer, const LossFn& loss, const Batch& batch,
                 const EpochSettings& settings, int epoch, int64_t step,
                 StepRecord* times = nullptr);

}  // namespace dtrain::train::detail
