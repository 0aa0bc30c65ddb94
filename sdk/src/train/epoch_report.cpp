#include "dtrain/train/epoch_report.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>
#include <variant>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "dtrain/train/best_epochs.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/memory.h"

namespace dtrain::train {

namespace {

const std::vector<std::string>& common_columns() {
  static const std::vector<std::string> columns{"epoch",
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
  return columns;
}

// ", instance_miou 0.8012, class_miou 0.7933": a run's own metrics.
std::string extra_words(const std::vector<std::string>& names, const std::vector<double>& values) {
  std::string words;
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    words += fmt::format(", {} {:.4f}", names[i], values[i]);
  }
  return words;
}

}  // namespace

std::string eval_words(const EvalStats& eval, const std::vector<std::string>& extra_columns) {
  return fmt::format("test loss {:.4f}, test accuracy {:.2f}%{}", eval.mean_loss,
                     100 * eval.accuracy, extra_words(extra_columns, eval.extra));
}

namespace {

std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::istringstream fields(line);
  for (std::string cell; std::getline(fields, cell, ',');) {
    cells.push_back(cell);
  }
  return cells;
}

}  // namespace

EpochReport::EpochReport(const std::string& csv_path, bool writes, EpochReportOptions options)
    : columns_(common_columns()), options_(std::move(options)) {
  columns_.insert(columns_.end(), options_.extra_columns.begin(), options_.extra_columns.end());
  if (writes) {
    if (options_.append) {
      read_earlier_rows(csv_path, columns_);
    }
    csv_.emplace(csv_path, columns_,
                 options_.append ? CsvWriter::Mode::kAppend : CsvWriter::Mode::kCreate);
  }
}

// The rows a resumed run's report already holds, for the best epoch; a
// row that is cut short or does not read as numbers is passed over (a
// report with other columns is refused by CsvWriter).
void EpochReport::read_earlier_rows(const std::string& path,
                                    const std::vector<std::string>& columns) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || split_cells(line) != columns) {
    return;
  }
  const std::size_t extras = options_.extra_columns.size();
  const std::size_t common = columns.size() - extras;
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = split_cells(line);
    if (cells.size() != columns.size()) {
      continue;
    }
    try {
      EvalStats eval{.mean_loss = std::stod(cells[6]), .accuracy = std::stod(cells[7])};
      for (std::size_t i = 0; i < extras; ++i) {
        eval.extra.push_back(std::stod(cells[common + i]));
      }
      consider(std::stoi(cells[0]), eval);
    } catch (const std::exception&) {
      continue;
    }
  }
}

double EpochReport::best_value(const EvalStats& eval) const {
  return metric_value(eval, options_.best_by, options_.extra_columns);
}

void EpochReport::consider(int epoch, const EvalStats& eval) {
  // The best value wins; a tie keeps the earlier epoch.
  const bool better = best_ && (options_.best_lower ? best_value(eval) < best_value(best_->eval)
                                                    : best_value(eval) > best_value(best_->eval));
  if (!best_ || better) {
    best_ = Best{epoch, eval};
  }
}

ReportRow EpochReport::record(int epoch, const EpochStats& train, const EvalStats& eval,
                              const CommStats& comm) {
  const double samples_per_s = static_cast<double>(train.samples) / train.seconds;
  const double peak_rss_mb = static_cast<double>(util::peak_rss_bytes()) / (1 << 20);
  DTRAIN_CHECK(eval.extra.size() == options_.extra_columns.size(),
               "EpochReport: ", eval.extra.size(), " extra metrics for ",
               options_.extra_columns.size(), " extra columns");
  std::vector<CsvWriter::Cell> cells{int64_t{epoch},
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
  cells.insert(cells.end(), eval.extra.begin(), eval.extra.end());
  ReportRow row{.columns = columns_, .values = {}};
  for (const CsvWriter::Cell& cell : cells) {
    row.values.push_back(std::holds_alternative<int64_t>(cell)
                             ? static_cast<double>(std::get<int64_t>(cell))
                             : std::get<double>(cell));
  }
  if (!csv_) {
    return row;
  }
  spdlog::info(
      "epoch {}/{}: train loss {:.4f}, {}, {:.0f} samples/s, {:.1f}s, peak RSS {:.0f} MiB{}", epoch,
      options_.epochs, train.mean_loss, eval_words(eval, options_.extra_columns), samples_per_s,
      train.seconds, peak_rss_mb,
      train.peak_device_mb > 0 ? fmt::format(", peak GPU {:.0f} MiB", train.peak_device_mb) : "");
  csv_->write_row(cells);
  consider(epoch, eval);
  if (options_.after_row) {
    options_.after_row(csv_->path());
  }
  return row;
}

std::optional<int> EpochReport::best_epoch() const {
  return best_ ? std::optional<int>(best_->epoch) : std::nullopt;
}

void EpochReport::finish(const EvalStats& eval, int epochs, double seconds, int world) {
  if (!csv_) {
    return;
  }
  spdlog::info(
      "done: test accuracy {:.2f}% after {} epochs in {:.1f}s on {} process(es); report in {}",
      100 * eval.accuracy, epochs, seconds, world, csv_->path());
  if (best_) {
    spdlog::info("best epoch by {}: {}, with {}", options_.best_by, best_->epoch,
                 eval_words(best_->eval, options_.extra_columns));
  }
}

}  // namespace dtrain::train
