// The flight recorder: each process keeps its last collectives (every
// group, every backend), recorded by the ProcessGroup front end, so that a
// hang or a timeout can be read back as "which rank, at which collective".
//
// Note [Flight recorder]
// The front end records a collective when it is numbered (scheduled), marks
// it started and finished from the collective's turn on the transport, and
// keeps its Work, whose end refines the state where a backend finishes later
// than its turn (NCCL's stream). At most `capacity` entries are kept, oldest
// dropped first, in a ring whose slots are reused: recording costs a lock
// and a copy into a slot, which allocates nothing once the slots have held
// entries of that shape (Note [A collective's cost], process_group.cpp). A
// dump is JSON in the shape of PyTorch's flight recorder ("entries" of
// record_id, pg_id, collective_seq_id, profiling_name, input_sizes, state,
// time_created_ns, ...), so its tools read ours; docs/debugging.md reads one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <c10/util/FunctionRef.h>

#include "dtrain/dist/work.h"

namespace dtrain::dist::detail {

struct RecordedCollective {
  std::int64_t record_id = 0;
  std::string group;             // the process group's name
  std::string backend;           // "gloo", "nccl", "mpi"
  std::vector<int> group_ranks;  // global ranks, by group rank
  std::int64_t seq = 0;          // collective_seq_id
  std::string op;                // "all_reduce(SUM)"
  std::vector<std::vector<std::int64_t>> input_sizes;
  std::vector<std::string> input_dtypes;  // "Float"
  // "scheduled", then "started", "completed" or "failed": literals only, so
  // that a transition copies no characters (Note [A collective's cost]).
  std::string_view state = "scheduled";
  std::int64_t timeout_ms = 0;
  // Wall clock, ns since the epoch; 0 while it has not happened.
  std::int64_t time_created_ns = 0;
  std::int64_t time_started_ns = 0;
  std::int64_t time_completed_ns = 0;
  std::weak_ptr<Work> work;
};

class FlightRecorder {
 public:
  explicit FlightRecorder(std::size_t capacity);

  // Records a scheduled collective (its record_id, times and state are set
  // here) and returns its record_id; 0 when the recorder keeps nothing.
  std::int64_t record(const RecordedCollective& entry);
  // The same, with the entry written by `fill` straight into its slot
  // (Note [A collective's cost], process_group.cpp).
  std::int64_t record(c10::function_ref<void(RecordedCollective&)> fill);
  void attach(std::int64_t id, const WorkPtr& work);
  void started(std::int64_t id);
  void finished(std::int64_t id, bool ok);

  // The kept entries, oldest first, with states refreshed from their Works.
  std::vector<RecordedCollective> entries() const;
  std::optional<RecordedCollective> last() const;
  // Where the process is: the oldest recent entry not completed (the one
  // it waits in, or the first that failed), else the last.
  std::optional<RecordedCollective> current() const;
  std::int64_t recorded() const;  // ever, kept or not
  // Blocks until an entry changed after `version` (returns the new version)
  // or `timeout` passed (returns `version`).
  std::int64_t wait_for_change(std::int64_t version, std::chrono::milliseconds timeout) const;

 private:
  RecordedCollective* find_locked(std::int64_t id);
  // The kept entries from the `skip`-th oldest on, oldest first.
  std::vector<RecordedCollective> copy_locked(std::size_t skip) const;
  void changed_locked();

  std::size_t capacity_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  // A ring of up to capacity_ entries; oldest_ indexes the oldest once full.
  std::vector<RecordedCollective> slots_;
  std::size_t oldest_ = 0;
  std::int64_t next_id_ = 1;
  std::int64_t version_ = 0;
};

// The process's recorder: DTRAIN_FLIGHT_RECORDER_ENTRIES entries (default
// 2000; 0 records nothing).
FlightRecorder& flight_recorder();

// PyTorch's flight-recorder dump as JSON: version, rank, world_size,
// pg_config (each group's name, backend and ranks) and entries.
std::string flight_recorder_json(const std::vector<RecordedCollective>& entries, int rank,
                                 int world_size);

std::int64_t wall_clock_ns();

}  // namespace dtrain::dist::detail
