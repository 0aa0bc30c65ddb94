#include "dtrain/train/comm_stats.h"

#include <algorithm>
#include <chrono>

namespace dtrain::train {

CommStats take_comm_stats(ddp::Timeline& timeline) {
  CommStats stats{timeline.communication_seconds(), timeline.hidden_fraction()};
  for (const ddp::StepEvents& step : timeline.steps()) {
    ddp::TimePoint last = step.backward_end;
    for (const ddp::BucketEvent& bucket : step.buckets) {
      last = std::max(last, bucket.end);
    }
    stats.wait_seconds += std::chrono::duration<double>(last - step.backward_end).count();
  }
  timeline.clear();
  return stats;
}

}  // namespace dtrain::train
