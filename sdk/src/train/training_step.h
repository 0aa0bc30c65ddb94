// One batch of a training step on the job's device: the gradients zeroed
// at a step's first batch, the loss under the run's autocast and its
// backward (weighted by the batch's share of the step's samples when
// several batches make one step, and without DDP's all-reduce but for the
// last); at the step's last batch, the loss scaler's unscale and step (fp16:
// a step whose gradients overflowed is skipped and the scale backs off) or,
// without one, the check that the gradients are finite, then clipping and
// the optimizer's step. Every rank holds the same all-reduced gradients, so
// every rank of a diverged run stops at the same step, the step not taken.
#pragma once

#include <cstdint>

#include <torch/optim/optimizer.h>

#include "dtrain/train/dataset.h"
#include "dtrain/train/train_epoch.h"

namespace dtrain::train::detail {

// Where a batch lies in its optimizer step (EpochSettings::accumulate).
struct MicroBatch {
  bool first = true;  // the gradients are zeroed before it
  bool last = true;   // the optimizer steps after it
  double weight = 1;  // of its loss in the step's: its share of the step's samples
};

struct BatchResult {
  at::Tensor loss;       // of the batch, detached, where it was computed
  bool skipped = false;  // the loss scaler skipped the step it ended
};

// With `times`, also records the loss's value and the times of the
// forward, backward, optimizer and end (reading the loss waits for the
// step on a GPU). Throws dtrain::Error naming the epoch and step (`step`
// from 0) when the gradients hold NaN or infinite values: the one read of
// the device a step makes (fp32; fp16 steps go through the loss scaler,
// which reads whether they overflowed).
BatchResult take_step(const EpochModel& model, const Batch& batch, const EpochSettings& settings,
                      int epoch, int64_t step, const MicroBatch& micro,
                      StepRecord* times = nullptr);

}  // namespace dtrain::train::detail
