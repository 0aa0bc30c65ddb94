#include "round_records.h"

#include <algorithm>

namespace dtrain::launch {

namespace {

std::string record_name(const std::string& key) {
  return "records/" + key;
}

}  // namespace

std::string records_prefix(const std::string& run_id, int round) {
  // As the agents' own keys: PrefixStore "dtrun/<run id>", Rendezvous "round/<N>/".
  return "dtrun/" + run_id + "/round/" + std::to_string(round) + "/records";
}

JobRecords read_round_records(Rendezvous& rdzv, int round, int world_size) {
  JobRecords records;
  for (int rank = 0; rank < world_size; ++rank) {
    if (const auto text = rdzv.read(round, record_name(store::failure_record_key(rank)))) {
      if (auto record = store::decode_failure_record(*text)) {
        records.failures.push_back(std::move(*record));
      }
    }
    if (const auto text = rdzv.read(round, record_name(store::progress_record_key(rank)))) {
      if (auto record = store::decode_progress_record(*text)) {
        records.progress.push_back(std::move(*record));
      }
    }
  }
  return records;
}

ProgressWatch::ProgressWatch(int round, std::vector<int> ranks, std::chrono::milliseconds stall)
    : round_(round), ranks_(std::move(ranks)), stall_(stall) {}

std::map<int, ProgressWatch::DumpAsk> ProgressWatch::check(Rendezvous& rdzv,
                                                           Clock::time_point now) {
  bool any_moved = false;
  for (const int rank : ranks_) {
    const auto text = rdzv.read(round_, record_name(store::progress_record_key(rank)));
    if (!text) {
      continue;  // not started yet, or not a dtrain program
    }
    Seen& seen = seen_[rank];
    if (*text != seen.record) {
      const auto record = store::decode_progress_record(*text);
      // Scheduled or started: it waits on the transport, or on its peers.
      const bool waiting = record && (record->state == "scheduled" || record->state == "started");
      seen = {*text, now, {}, waiting};
      if (record) {
        seen.ask = {record->dump_signal, record->pid};
      }
      any_moved = true;
    }
  }
  if (any_moved) {
    asked_ = false;  // progress again: a later stall is a new one
  }
  const bool stalled = std::any_of(seen_.begin(), seen_.end(), [&](const auto& entry) {
    return entry.second.in_collective && now - entry.second.since >= stall_;
  });
  std::map<int, DumpAsk> to_signal;
  if (!stalled || asked_) {
    return to_signal;
  }
  asked_ = true;
  for (const auto& [rank, s] : seen_) {
    if (s.ask.signal > 0 && s.ask.pid > 0) {
      to_signal[rank] = s.ask;
    }
  }
  return to_signal;
}

}  // namespace dtrain::launch
