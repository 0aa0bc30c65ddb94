// Timing of a training step for the step benchmarks: `warmup` untimed
// calls, then `steps` timed one by one; the median of the timed ones. And
// the flags that set them.
#pragma once

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "dtrain/util/cli_checks.h"

namespace dtrain::bench {

// The middle value, or the mean of the two middle ones (as Python's
// statistics.median, which the peers use). `ms` must not be empty.
inline double median_of(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const size_t mid = ms.size() / 2;
  return ms.size() % 2 == 1 ? ms[mid] : (ms[mid - 1] + ms[mid]) / 2;
}

// Calls step(i) for i = 0 .. warmup + steps - 1 and returns the median
// milliseconds of the calls from i = warmup on. `step` must finish its work
// before returning (read a value back), so the time is the whole step's.
template <typename Step>
double median_step_ms(int warmup, int steps, Step&& step) {
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(steps));
  for (int i = 0; i < warmup + steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    step(i);
    if (i >= warmup) {
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
  }
  return median_of(std::move(ms));
}

// --warmup (untimed steps), --steps (timed steps) and --threads (intra-op
// threads), the flags every step benchmark takes.
inline void add_step_flags(CLI::App& app, int& warmup, int& steps, int& threads) {
  app.add_option("--warmup", warmup, "untimed steps")
      ->check(dtrain::util::non_negative())
      ->capture_default_str();
  app.add_option("--steps", steps, "timed steps")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--threads", threads, "intra-op threads")
      ->check(dtrain::util::positive())
      ->capture_default_str();
}

}  // namespace dtrain::bench
