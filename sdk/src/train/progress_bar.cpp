#include "dtrain/train/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace dtrain::train {

std::string render_progress(std::string_view label, std::int64_t done, std::int64_t total,
                            double elapsed_seconds, std::string_view status, int bar_width) {
  const double fraction =
      total > 0 ? std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0)
                : 0.0;
  const int filled = static_cast<int>(fraction * bar_width);
  const double rate = elapsed_seconds > 0 ? static_cast<double>(done) / elapsed_seconds : 0.0;
  std::string line =
      fmt::format("{} [{}{}] {}/{} {:.1f}s {:.1f} it/s", label, std::string(filled, '#'),
                  std::string(bar_width - filled, ' '), done, total, elapsed_seconds, rate);
  if (!status.empty()) {
    line += fmt::format(" {}", status);
  }
  return line;
}

ProgressBar::ProgressBar(std::string label, std::int64_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled),
      interactive_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() {
  if (!finished_) {
    finish();
  }
}

void ProgressBar::advance(std::int64_t n, std::string_view status) {
  done_ += n;
  if (!status.empty()) {
    status_ = status;
  }
  if (due()) {
    draw(false);
  }
}

void ProgressBar::advance(std::int64_t n, const std::function<std::string()>& status) {
  done_ += n;
  if (due()) {
    status_ = status();
    draw(false);
  }
}

bool ProgressBar::due() {
  if (!enabled_) {
    return false;
  }
  const auto now = std::chrono::steady_clock::now();
  if (interactive_) {
    if (now - last_draw_ < std::chrono::milliseconds(100)) {
      return false;
    }
    last_draw_ = now;
    return true;
  }
  if (total_ <= 0) {
    return false;
  }
  const int tenths = static_cast<int>(std::min<std::int64_t>(done_ * 10 / total_, 10));
  if (tenths <= logged_tenths_ || tenths >= 10) {
    return false;
  }
  logged_tenths_ = tenths;
  return true;
}

void ProgressBar::finish(std::string_view status) {
  if (finished_) {
    return;
  }
  finished_ = true;
  if (!status.empty()) {
    status_ = status;
  }
  if (enabled_) {
    draw(true);
  }
}

void ProgressBar::draw(bool final) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = render_progress(label_, done_, total_, elapsed, status_);
  if (interactive_) {
    std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
    std::fflush(stderr);
  } else {
    spdlog::info("{}", line);
  }
}

}  // namespace dtrain::train
