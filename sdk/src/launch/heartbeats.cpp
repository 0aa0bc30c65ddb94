#include "heartbeats.h"

#include <algorithm>
#include <string>

namespace dtrain::launch {

std::chrono::milliseconds heartbeat_period(std::chrono::milliseconds timeout,
                                           std::chrono::milliseconds monitor_interval) {
  // Not std::clamp(timeout / 5, monitor_interval, 1 s): its bounds cross
  // (undefined behaviour) once the monitor interval exceeds a second.
  return std::max(std::min(timeout / 5, std::chrono::milliseconds(1000)), monitor_interval);
}

Heartbeats::Heartbeats(Rendezvous& rdzv, int round, int self, int members,
                       std::chrono::milliseconds every, std::chrono::milliseconds timeout)
    : rdzv_(rdzv),
      round_(round),
      self_(self),
      every_(every),
      timeout_(timeout),
      next_beat_(Clock::now()) {
  for (int group = 0; group < members; ++group) {
    if (group != self) {
      peers_[group] = {-1, Clock::now()};
    }
  }
}

std::optional<int> Heartbeats::beat_and_check(Clock::time_point now) {
  if (!due(now)) {
    return std::nullopt;
  }
  next_beat_ = now + every_;
  rdzv_.add(round_, "hb/" + std::to_string(self_), 1);
  for (auto& [group, seen] : peers_) {
    const std::int64_t beats = rdzv_.add(round_, "hb/" + std::to_string(group), 0);
    if (beats != seen.beats) {
      seen = {beats, now};
    } else if (now - seen.since > timeout_) {
      return group;
    }
  }
  return std::nullopt;
}

}  // namespace dtrain::launch
