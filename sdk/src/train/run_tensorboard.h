// What a training run shows in TensorBoard (--tensorboard DIR), written by
// rank 0 alone (TensorBoardWriter):
//
//   train/loss, train/lr, train/loss_scale (fp16), train/samples_per_s
//       after every step, at the run's global step: (epoch - 1) times the
//       steps of an epoch, plus the step in its epoch (from 1), so a
//       resumed run continues the curves where its checkpoint was written
//   epoch/<column>   every number of the report's row (epoch_report.h),
//       at the epoch's number; flushed after each epoch
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "dtrain/train/epoch_report.h"
#include "dtrain/train/tensorboard_writer.h"
#include "dtrain/train/train_epoch.h"

namespace dtrain::train::detail {

class RunTensorBoard {
 public:
  // Opens DIR's event file when `writes` (rank 0) and DIR is not empty, so
  // a bad directory fails before any work is done.
  RunTensorBoard(const std::string& directory, bool writes);

  bool writes() const { return writer_.has_value(); }
  // The global batches of an epoch: the x-axis's stride per epoch.
  void set_steps_per_epoch(int64_t steps) { steps_per_epoch_ = steps; }

  // A step's scalars; `world` processes stepped alike (the job's
  // throughput is this rank's times the world).
  void add_step(const StepRecord& step, double lr, std::optional<double> loss_scale, int world);
  // The report's row of `epoch`, then writes everything to the file.
  void add_epoch(int epoch, const ReportRow& row);

 private:
  std::optional<TensorBoardWriter> writer_;
  int64_t steps_per_epoch_ = 1;
  int64_t last_step_ = -1;
};

}  // namespace dtrain::train::detail
