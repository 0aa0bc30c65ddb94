// Which of a few interchangeable kernels runs fastest on a kind of input,
// measured on the first input of that kind and remembered for the process
// (Note [Choosing the CUDA FPS kernel by timing it] in
// src/cuda/furthest_point_sample_fastest.cu). No CUDA here: the caller says how to
// time one run, so tests drive the choice with made-up times.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtrain::kernels::detail {

// What the first input of a kind measured: each candidate's name and
// fastest timed run, in seconds, and the candidate chosen (the fastest; the
// lowest position on a tie, so the caller lists its default first).
// differs[i]: candidate i gave another result than the first candidate on
// that input, so it was neither timed (its seconds stay infinite) nor
// chosen.
struct MeasuredChoice {
  std::vector<std::string> names;
  std::vector<double> seconds;
  std::vector<bool> differs;
  std::size_t chosen = 0;
};

// A run's result, for comparing candidates that should agree (FPS: the
// picks).
using RunResult = std::vector<std::int64_t>;

template <class Key>
class FastestChoice {
 public:
  // Each candidate runs once untimed (its first launch may load its
  // module), then `rounds` times timed, the candidates taking turns so
  // that a clock still rising, or other work on the device, weighs on
  // them alike.
  explicit FastestChoice(int rounds) : rounds_(rounds) {
    if (rounds < 1) {
      throw std::invalid_argument("FastestChoice: rounds must be at least 1, got " +
                                  std::to_string(rounds));
    }
  }

  // The position of the fastest of the candidates `names` for `key`:
  // measured with `seconds_of_run(i)`, which runs candidate i once and
  // returns how long it took, on the first call for `key`; remembered after
  // (so a key must stand for one list of candidates). One caller measures
  // at a time, the others waiting (a key is measured once); measuring is
  // rare, so one lock serves. A run that throws leaves the key unmeasured
  // and the exception goes to the caller.
  //
  // With `last_result` (the result of the run just made), the candidates
  // are meant to be interchangeable and the first is the reference: after
  // each untimed run the result is compared with the first candidate's, and
  // a candidate that differs is dropped, never timed nor chosen, and named
  // in `differs`. So a wrong kernel costs its speed-up, never a result.
  std::size_t choose(const Key& key, const std::vector<std::string>& names,
                     const std::function<double(std::size_t)>& seconds_of_run,
                     const std::function<RunResult()>& last_result = {}) {
    if (names.empty()) {
      throw std::invalid_argument("FastestChoice: no candidates to choose from");
    }
    const std::lock_guard lock(mutex_);
    if (const auto found = measured_.find(key); found != measured_.end()) {
      return found->second.chosen;
    }
    const std::size_t candidates = names.size();
    MeasuredChoice measured;
    measured.names = names;
    measured.seconds.assign(candidates, std::numeric_limits<double>::infinity());
    measured.differs.assign(candidates, false);
    RunResult reference;
    for (std::size_t i = 0; i < candidates; ++i) {
      seconds_of_run(i);  // untimed
      if (last_result) {
        if (i == 0) {
          reference = last_result();
        } else {
          measured.differs[i] = last_result() != reference;
        }
      }
    }
    for (int round = 0; round < rounds_; ++round) {
      for (std::size_t i = 0; i < candidates; ++i) {
        if (measured.differs[i]) {
          continue;
        }
        const double seconds = seconds_of_run(i);
        if (seconds < measured.seconds[i]) {
          measured.seconds[i] = seconds;
        }
      }
    }
    for (std::size_t i = 1; i < candidates; ++i) {
      if (measured.seconds[i] < measured.seconds[measured.chosen]) {
        measured.chosen = i;
      }
    }
    measured_.emplace(key, measured);
    return measured.chosen;
  }

  // The choice remembered for `key`, if it was measured: for callers that
  // cannot measure now (a CUDA stream being captured into a graph).
  std::optional<std::size_t> remembered(const Key& key) const {
    const std::lock_guard lock(mutex_);
    const auto found = measured_.find(key);
    return found == measured_.end() ? std::nullopt : std::optional(found->second.chosen);
  }

  // Every key measured so far, for reports.
  std::map<Key, MeasuredChoice> measured() const {
    const std::lock_guard lock(mutex_);
    return measured_;
  }

 private:
  const int rounds_;
  mutable std::mutex mutex_;
  std::map<Key, MeasuredChoice> measured_;
};

}  // namespace dtrain::kernels::detail
