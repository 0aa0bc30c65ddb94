// The agent's side of the workers' records (dtrain/store/job_records.h):
// where they go, reading a round's back for the failure summary, and
// watching this node's ranks for one that stops making progress.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "dtrain/launch/failure.h"
#include "dtrain/launch/rendezvous.h"

namespace dtrain::launch {

// The key prefix, in the agents' store, of round `round`'s records.
std::string records_prefix(const std::string& run_id, int round);

// Every record ranks 0..world_size-1 left in round `round`.
JobRecords read_round_records(Rendezvous& rdzv, int round, int world_size);

// Note [A rank that stops making progress]: each check reads the progress
// records of this node's ranks; a rank that has sat in one unfinished
// collective for `stall` (by this agent's clock) waits on a peer that
// stopped making progress. The ranks of this node that can dump their
// flight recorders are then asked to, once until some rank moves again:
// the live ranks record where they wait; a stopped rank cannot, and its
// last progress record says where it stopped.
class ProgressWatch {
 public:
  using Clock = std::chrono::steady_clock;
  ProgressWatch(int round, std::vector<int> ranks, std::chrono::milliseconds stall);

  // Whom to signal for a rank's dump: the process that recorded (a worker
  // may be a wrapper that started it) and its signal.
  struct DumpAsk {
    int signal = 0;
    std::int64_t pid = 0;
    bool operator==(const DumpAsk&) const = default;
  };
  // The ranks to ask now (empty most times).
  std::map<int, DumpAsk> check(Rendezvous& rdzv, Clock::time_point now);

 private:
  struct Seen {
    std::string record;
    Clock::time_point since;
    DumpAsk ask;
    bool in_collective = false;
  };
  int round_;
  std::vector<int> ranks_;
  std::chrono::milliseconds stall_;
  std::map<int, Seen> seen_;
  bool asked_ = false;  // this stall's dumps were asked for
};

}  // namespace dtrain::launch
