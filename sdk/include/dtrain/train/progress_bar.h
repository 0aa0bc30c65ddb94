// Progress of a long loop (an epoch, an evaluation), for people watching.
//
//   ProgressBar bar("epoch 1", num_batches, /*enabled=*/rank == 0);
//   for (...) { ...; bar.advance(1, fmt::format("loss {:.3f}", loss)); }
//   bar.finish();
//
// On a terminal it redraws one line on stderr at most every 100 ms. When
// stderr is not a terminal (CI, log files) it logs a line at every tenth of
// the way instead, so logs stay readable. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace dtrain::train {

class ProgressBar {
 public:
  ProgressBar(std::string label, std::int64_t total, bool enabled = true);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Counts n more steps done; status is shown after the bar (e.g. the loss).
  void advance(std::int64_t n = 1, std::string_view status = {});
  // The same, with the status made only when the bar draws: a loss still
  // on the GPU is read (a host sync) a few times a second, not every step.
  void advance(std::int64_t n, const std::function<std::string()>& status);
  // Draws the final state and ends the line. Called by the destructor if needed.
  void finish(std::string_view status = {});

  std::int64_t done() const { return done_; }

 private:
  // Whether advance() draws now (and notes that it does).
  bool due();
  void draw(bool final);

  std::string label_;
  std::int64_t total_;
  std::int64_t done_ = 0;
  bool enabled_;
  bool finished_ = false;
  bool interactive_;
  int logged_tenths_ = 0;
  std::string status_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// One line of progress text: "label [#####     ] 50/100 2.0s 25.0 it/s status".
std::string render_progress(std::string_view label, std::int64_t done, std::int64_t total,
                            double elapsed_seconds, std::string_view status, int bar_width = 30);

}  // namespace dtrain::train
