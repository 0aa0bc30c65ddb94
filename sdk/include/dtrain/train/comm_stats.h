// How long a job's gradient all-reduces took over some steps, read from
// DDP's timeline (ddp/timeline.h): for the report and for --rank-weights
// auto, which must not count waiting for a peer as a rank's own work.
#pragma once

#include "dtrain/ddp/timeline.h"

namespace dtrain::train {

struct CommStats {
  double seconds = 0;          // every bucket's all-reduce, launch to finish, summed
  double hidden_fraction = 0;  // the share of it that overlapped backward
  // Wall time from the end of each backward until its last all-reduce
  // finished, summed: the time this rank waited for its peers' gradients
  // (and the part of the transfer backward did not hide). Not seconds times
  // (1 - hidden_fraction): buckets in flight at once would count twice.
  double wait_seconds = 0;
};

// The communication of the steps `timeline` recorded, which it then forgets.
CommStats take_comm_stats(ddp::Timeline& timeline);

}  // namespace dtrain::train
