// What a training run reports after each epoch: one log line and one CSV
// row, written by rank 0 only (the numbers are already the whole job's).
//
// CSV columns: epoch, samples, epoch_time_s, samples_per_s, peak_rss_mb,
// train_loss, test_loss, test_accuracy, rank_samples_per_s_min,
// rank_samples_per_s_max, step_ms, comm_s, comm_hidden_fraction,
// peak_device_mb, then a
// run's own metrics (EvalStats::extra), such as part segmentation's mIoU.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dtrain/train/comm_stats.h"
#include "dtrain/train/csv_writer.h"
#include "dtrain/train/epoch_stats.h"
#include "dtrain/train/evaluation.h"

namespace dtrain::train {

class EpochReport {
 public:
  // Opens the CSV when `writes` (rank 0), so a bad path fails before any
  // work is done; other ranks report nothing. `append` adds rows to an
  // existing report with the same columns (a resumed run) instead of
  // starting it afresh. `extra_columns` name EvalStats::extra's values.
  EpochReport(const std::string& csv_path, bool writes, int epochs, bool append = false,
              std::vector<std::string> extra_columns = {});

  void record(int epoch, const EpochStats& train, const EvalStats& eval, const CommStats& comm);
  // The closing line: final accuracy, wall time, process count, report path.
  void finish(const EvalStats& eval, double seconds, int world);

 private:
  std::optional<CsvWriter> csv_;
  int epochs_;
  std::vector<std::string> extra_columns_;
};

}  // namespace dtrain::train
