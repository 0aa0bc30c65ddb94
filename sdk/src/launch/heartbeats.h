// Heartbeats of one round: each agent increments its counter in the store
// ("hb/<group rank>") every `every`, and reads the others'. A peer whose
// counter has not moved for `timeout`, by this agent's own clock, is taken
// as gone (agent killed, host unreachable). Only counters cross machines,
// never timestamps, so clocks need not agree.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>

#include "dtrain/launch/rendezvous.h"

namespace dtrain::launch {

// How often an agent beats: five times per `timeout`, so one late beat is
// no loss, but at most once a second (the store is shared by every agent)
// and at least once per monitor interval, as the agent's loop runs no
// oftener. The last wins: validate() keeps the interval at most half the
// timeout, so a slow loop still beats twice per timeout.
std::chrono::milliseconds heartbeat_period(std::chrono::milliseconds timeout,
                                           std::chrono::milliseconds monitor_interval);

class Heartbeats {
 public:
  using Clock = std::chrono::steady_clock;

  Heartbeats(Rendezvous& rdzv, int round, int self, int members, std::chrono::milliseconds every,
             std::chrono::milliseconds timeout);

  // When a beat is due: beats, then returns the group rank of a silent peer
  // if there is one. Cheap (no store call) when no beat is due.
  std::optional<int> beat_and_check(Clock::time_point now);
  bool due(Clock::time_point now) const { return now >= next_beat_; }

 private:
  struct Seen {
    std::int64_t beats = -1;
    Clock::time_point since;
  };
  Rendezvous& rdzv_;
  int round_;
  int self_;
  std::chrono::milliseconds every_;
  std::chrono::milliseconds timeout_;
  Clock::time_point next_beat_;
  std::map<int, Seen> peers_;
};

}  // namespace dtrain::launch
