// What a training run reports after each epoch: one log line and one CSV
// row, written by rank 0 only (the numbers are already the whole job's),
// and at the end the run's last and best epochs.
//
// CSV columns: epoch, samples, epoch_time_s, samples_per_s, peak_rss_mb,
// train_loss, test_loss, test_accuracy, rank_samples_per_s_min,
// rank_samples_per_s_max, step_ms, comm_s, comm_hidden_fraction,
// peak_device_mb, then a
// run's own metrics (EvalStats::extra), such as part segmentation's mIoU.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dtrain/train/comm_stats.h"
#include "dtrain/train/csv_writer.h"
#include "dtrain/train/epoch_stats.h"
#include "dtrain/train/evaluation.h"

namespace dtrain::train {

// "test loss 0.5101, test accuracy 87.50%, mean_class_accuracy 0.8750":
// an evaluation in the log's words, its extra values named by `extra_columns`.
std::string eval_words(const EvalStats& eval, const std::vector<std::string>& extra_columns);

// An epoch's row of the report: each column's name and value, the extra
// columns included (what TensorBoard's epoch/ scalars show, --tensorboard).
struct ReportRow {
  std::vector<std::string> columns;
  std::vector<double> values;
};

struct EpochReportOptions {
  int epochs = 0;       // of the whole run
  bool append = false;  // add rows to an existing report (a resumed run)
  // Name EvalStats::extra's values, in order.
  std::vector<std::string> extra_columns = {};
  // The column whose highest value (lowest, with best_lower) makes the
  // best epoch: test_accuracy, test_loss or one of extra_columns.
  std::string best_by = "test_accuracy";
  bool best_lower = false;
  // Called after each row is written, with the report's path.
  std::function<void(const std::string& csv)> after_row = {};
};

class EpochReport {
 public:
  // Opens the CSV when `writes` (rank 0), so a bad path fails before any
  // work is done; other ranks report nothing. With options.append the rows
  // of the run it continues count for the best epoch too.
  EpochReport(const std::string& csv_path, bool writes, EpochReportOptions options);

  // Writes the epoch's row (rank 0) and returns it, on every rank.
  ReportRow record(int epoch, const EpochStats& train, const EvalStats& eval,
                   const CommStats& comm);
  // The closing lines: final accuracy after `epochs`, wall time, process
  // count, report path; then the best epoch and its numbers.
  void finish(const EvalStats& eval, int epochs, double seconds, int world);

  // The epoch with the best best_by so far (ties: the earlier), among
  // this run's rows and, appending, the report's earlier ones; none on
  // ranks that do not write or before any row.
  std::optional<int> best_epoch() const;

 private:
  // An epoch's evaluation, as the best so far.
  struct Best {
    int epoch = 0;
    EvalStats eval;
  };
  double best_value(const EvalStats& eval) const;
  void consider(int epoch, const EvalStats& eval);
  void read_earlier_rows(const std::string& path, const std::vector<std::string>& columns);

  std::vector<std::string> columns_;
  std::optional<CsvWriter> csv_;
  EpochReportOptions options_;
  std::optional<Best> best_;
};

}  // namespace dtrain::train
