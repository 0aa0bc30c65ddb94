// A per-step record of backward and each bucket's communication, to see
// whether communication hides behind backward.
//
//   options.record_timeline = true;  ... train ...
//   ddp.timeline().write_chrome_trace("trace.json");   // chrome://tracing, Perfetto
//   spdlog::info("{}", ddp.timeline().summary());
//   // "communication hidden behind backward: 83.1% (12 steps, 3 buckets/step)"
//
// Backward spans from its first gradient-ready hook to the end of the
// autograd pass; a bucket's communication from its launch to the moment
// its Work finished.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace dtrain::ddp {

using TimePoint = std::chrono::steady_clock::time_point;

struct BucketEvent {
  std::size_t bucket = 0;
  std::int64_t bytes = 0;
  TimePoint start;
  TimePoint end;
};

struct StepEvents {
  std::int64_t step = 0;
  TimePoint backward_start;
  TimePoint backward_end;
  std::vector<BucketEvent> buckets;
};

class Timeline {
 public:
  explicit Timeline(int rank = 0) : rank_(rank) {}

  void add_step(StepEvents step);
  std::vector<StepEvents> steps() const;
  void clear();

  // Fraction of all communication time that overlapped backward, in [0, 1];
  // 0 when nothing was recorded.
  double hidden_fraction() const;
  // Seconds of communication recorded: every bucket's launch-to-finish
  // time, summed (a group runs its collectives one at a time).
  double communication_seconds() const;
  // "communication hidden behind backward: X% (N steps, B buckets/step)".
  std::string summary() const;
  // Chrome trace event format (JSON), times in microseconds from the first
  // recorded step; pid = rank, tid 0 = backward, tid 1 = communication.
  // Written to a temporary file and renamed, so a reader never sees half a file.
  void write_chrome_trace(const std::string& path) const;

 private:
  int rank_;
  mutable std::mutex mutex_;
  std::vector<StepEvents> steps_;
};

}  // namespace dtrain::ddp
