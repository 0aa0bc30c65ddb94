#include "dtrain/train/epoch_report.h"

#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "dtrain/util/errors.h"
#include "dtrain/util/memory.h"

namespace dtrain::train {

EpochReport::EpochReport(const std::string& csv_path, bool writes, int epochs, bool append,
                         std::vector<std::string> extra_columns)
    : epochs_(epochs), extra_columns_(std::move(extra_columns)) {
  if (writes) {
    std::vector<std::string> columns{"epoch",
                                     "samples",
                                     "epoch_time_s",
                                     "samples_per_s",
                                     "peak_rss_mb",
                                     "train_loss",
                                     "test_loss",
                                     "test_accuracy",
                                     "rank_samples_per_s_min",
                                     "rank_samples_per_s_max",
                                     "step_ms",
                                     "comm_s",
                                     "comm_hidden_fraction",
                                     "peak_device_mb"};
    columns.insert(columns.end(), extra_columns_.begin(), extra_columns_.end());
    csv_.emplace(csv_path, std::move(columns),
                 append ? CsvWriter::Mode::kAppend : CsvWriter::Mode::kCreate);
  }
}

void EpochReport::record(int epoch, const EpochStats& train, const EvalStats& eval,
                         const CommStats& comm) {
  if (!csv_) {
    return;
  }
  const double samples_per_s = static_cast<double>(train.samples) / train.seconds;
  const double peak_rss_mb = static_cast<double>(util::peak_rss_bytes()) / (1 << 20);
  DTRAIN_CHECK(eval.extra.size() == extra_columns_.size(), "EpochReport: ", eval.extra.size(),
               " extra metrics for ", extra_columns_.size(), " extra columns");
  std::string extras;
  for (std::size_t i = 0; i < extra_columns_.size(); ++i) {
    extras += fmt::format(", {} {:.4f}", extra_columns_[i], eval.extra[i]);
  }
  spdlog::info(
      "epoch {}/{}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}%{}, {:.0f} "
      "samples/s, {:.1f}s, peak RSS {:.0f} MiB{}",
      epoch, epochs_, train.mean_loss, eval.mean_loss, 100 * eval.accuracy, extras, samples_per_s,
      train.seconds, peak_rss_mb,
      train.peak_device_mb > 0 ? fmt::format(", peak GPU {:.0f} MiB", train.peak_device_mb) : "");
  std::vector<CsvWriter::Cell> row{int64_t{epoch},
                                   train.samples,
                                   train.seconds,
                                   samples_per_s,
                                   peak_rss_mb,
                                   train.mean_loss,
                                   eval.mean_loss,
                                   eval.accuracy,
                                   train.rank_samples_per_s_min,
                                   train.rank_samples_per_s_max,
                                   train.step_ms,
                                   comm.seconds,
                                   comm.hidden_fraction,
                                   train.peak_device_mb};
  row.insert(row.end(), eval.extra.begin(), eval.extra.end());
  csv_->write_row(row);
}

void EpochReport::finish(const EvalStats& eval, double seconds, int world) {
  if (csv_) {
    spdlog::info(
        "done: test accuracy {:.2f}% after {} epochs in {:.1f}s on {} process(es); report in {}",
        100 * eval.accuracy, epochs_, seconds, world, csv_->path());
  }
}

}  // namespace dtrain::train
