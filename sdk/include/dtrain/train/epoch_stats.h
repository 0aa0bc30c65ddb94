// What one epoch of training gives back (train_epoch.h), and where a
// partly trained epoch stands: the numbers a report row and a mid-epoch
// checkpoint are made of.
#pragma once

#include <cstdint>

namespace dtrain::train {

// Where an epoch stands after some of its steps, summed over every rank:
// what a mid-epoch checkpoint keeps, and where a resumed epoch starts.
struct EpochPosition {
  int64_t steps = 0;    // steps every rank has taken
  double loss_sum = 0;  // their losses times their samples
  int64_t samples = 0;  // their samples
};

struct EpochStats {
  double mean_loss = 0;
  int64_t samples = 0;       // over every rank
  double seconds = 0;        // this rank's
  int64_t rank_samples = 0;  // this rank's, in the steps this run took
  // This rank's time until its own last step ended: without the wait in
  // DDP's join for ranks with more steps (Sharding::measure).
  double loop_seconds = 0;
  double step_ms = 0;  // this rank's mean time per step
  // The slowest and the fastest rank's own samples per second: a wide gap
  // means the fast ranks wait for the slow one at every all-reduce.
  double rank_samples_per_s_min = 0;
  double rank_samples_per_s_max = 0;
  // This rank's peak of GPU memory allocated by LibTorch during the
  // epoch's training, in MiB (torch.cuda.max_memory_allocated after
  // reset_peak_memory_stats at its start); 0 on the CPU.
  double peak_device_mb = 0;
  // Optimizer steps the fp16 loss scaler skipped: their gradients held
  // inf or NaN (the scale then backed off).
  int64_t skipped_steps = 0;
  // Not 0: a stop was asked for by this signal, and the epoch ended after
  // `stopped_after` steps, saved by EpochSettings::save_mid_epoch; the
  // other numbers are then not the epoch's.
  int stop_signal = 0;
  int64_t stopped_after = 0;
};

}  // namespace dtrain::train
