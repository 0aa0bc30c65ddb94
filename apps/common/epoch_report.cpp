#include "epoch_report.h"

#include <spdlog/spdlog.h>

#include "dtrain/util/memory.h"

namespace dtrain::apps {

EpochReport::EpochReport(const std::string& csv_path, bool writes, int epochs, bool append)
    : epochs_(epochs) {
  if (writes) {
    csv_.emplace(csv_path,
                 std::vector<std::string>{"epoch", "samples", "epoch_time_s", "samples_per_s",
                                          "peak_rss_mb", "train_loss", "test_loss", "test_accuracy",
                                          "rank_samples_per_s_min", "rank_samples_per_s_max",
                                          "step_ms", "comm_s", "comm_hidden_fraction"},
                 append ? train::CsvWriter::Mode::kAppend : train::CsvWriter::Mode::kCreate);
  }
}

void EpochReport::record(int epoch, const EpochStats& train, const EvalStats& eval,
                         const CommStats& comm) {
  if (!csv_) {
    return;
  }
  const double samples_per_s = static_cast<double>(train.samples) / train.seconds;
  const double peak_rss_mb = static_cast<double>(util::peak_rss_bytes()) / (1 << 20);
  spdlog::info(
      "epoch {}/{}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}%, {:.0f} "
      "samples/s, {:.1f}s, peak RSS {:.0f} MiB",
      epoch, epochs_, train.mean_loss, eval.mean_loss, 100 * eval.accuracy, samples_per_s,
      train.seconds, peak_rss_mb);
  csv_->write_row({int64_t{epoch}, train.samples, train.seconds, samples_per_s, peak_rss_mb,
                   train.mean_loss, eval.mean_loss, eval.accuracy, train.rank_samples_per_s_min,
                   train.rank_samples_per_s_max, train.step_ms, comm.seconds,
                   comm.hidden_fraction});
}

void EpochReport::finish(const EvalStats& eval, double seconds, int world) {
  if (csv_) {
    spdlog::info(
        "done: test accuracy {:.2f}% after {} epochs in {:.1f}s on {} process(es); report in {}",
        100 * eval.accuracy, epochs_, seconds, world, csv_->path());
  }
}

}  // namespace dtrain::apps
