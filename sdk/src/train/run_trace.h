// The main job's timeline as a Chrome trace (--trace PATH), which Perfetto
// (ui.perfetto.dev) and chrome://tracing open: every rank's first steps of
// each epoch, in one file that rank 0 writes after each epoch (merged from
// every rank's spans, written to a temporary file and renamed).
//
// A rank is a process (pid = rank) with two threads: "training" holds each
// step and, nested in it, the wait for its batch ("data"), "forward",
// "backward" (its autograd "compute", then the "all-reduce wait" for the
// buckets still in flight) and "optimizer"; "all-reduce" holds each DDP
// bucket's all-reduce from launch to finish. Times ("ts", "dur") are
// microseconds from the moment the first rank made its RunTrace, by the
// system clock: ranks on one machine share it, ranks on several agree as
// well as their clocks do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dtrain/ddp/timeline.h"
#include "dtrain/train/job.h"
#include "dtrain/train/train_epoch.h"

namespace dtrain::train::detail {

class RunTrace {
 public:
  // Records the first `steps` steps of each epoch when `path` is given;
  // rank 0 writes an empty trace there at once, so a bad path fails early.
  RunTrace(std::string path, int64_t steps, int rank);

  bool records() const { return !path_.empty(); }
  void add_step(const StepRecord& step);
  // DDP's record of the epoch's steps (ddp::Timeline), matched to the
  // recorded steps by time; those of other steps are left out.
  void add_communication(const std::vector<ddp::StepEvents>& steps);
  // The epoch's spans of every rank to rank 0, which rewrites the file: a
  // collective when the job is distributed.
  void write(const Job& job);

 private:
  // A recorded step and when its DDP backward ended (its wait began).
  struct Step {
    StepRecord record;
    std::vector<ddp::BucketEvent> buckets;
    ddp::TimePoint backward_end{};
  };
  std::string epoch_events() const;

  std::string path_;
  int64_t steps_;
  int rank_;
  // When this RunTrace was made: microseconds since the Unix epoch, and
  // the steady clock's microseconds then.
  double created_us_;
  double created_steady_us_;
  // The trace's time 0 on the steady clock, once agreed (the first write).
  std::optional<double> origin_steady_us_;
  std::vector<Step> epoch_;
  std::vector<std::string> written_;  // rank 0: every rank's events so far
};

}  // namespace dtrain::train::detail
