// Records a job's workers leave in their launcher's store: why a rank
// failed, and where each rank was. dtrun builds its failure summary from
// these fields alone, never from the wording of a worker's messages, so
// messages are free to change.
//
// dtrun hands each worker the store and a key prefix for the round
// (records_location() reads them from the environment); a worker writes
//   failure/<rank>         a FailureRecord, when a collective of it fails;
//   progress/<rank>        a ProgressRecord, its flight recorder's last
//                          collective, rewritten as it changes;
//   flight_recorder/<rank> its flight recorder's dump (JSON, for people
//                          and tools; dtrun does not parse it).
// Encodings are lines of "field value"; decoding never throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtrain::store {

// A collective that failed on `rank` (a global rank): which, and the ranks
// of its group that never reached it (global ranks; empty when every rank
// reached it, or nobody could tell).
struct FailureRecord {
  int rank = -1;
  std::string group;     // the process group's name: "default"
  std::int64_t seq = 0;  // the collective's number on its group, from 1
  std::string op;        // "all_reduce(SUM)"
  std::vector<int> missing;
  std::string message;  // the error as raised: shown, never read
  bool operator==(const FailureRecord&) const = default;
};

// The last collective a rank's flight recorder holds.
struct ProgressRecord {
  int rank = -1;
  std::string group;
  std::int64_t seq = 0;
  std::string op;
  std::string state;          // "scheduled", "started", "completed" or "failed"
  std::int64_t recorded = 0;  // collectives recorded so far (every group)
  int dump_signal = 0;        // asks the rank to dump its recorder; 0: none
  std::int64_t pid = 0;       // the process to send it to, on the rank's node
  bool operator==(const ProgressRecord&) const = default;
};

std::string encode(const FailureRecord& record);
std::string encode(const ProgressRecord& record);
std::optional<FailureRecord> decode_failure_record(const std::string& text);
std::optional<ProgressRecord> decode_progress_record(const std::string& text);

std::string failure_record_key(int rank);
std::string progress_record_key(int rank);
std::string flight_recorder_key(int rank);

// Where a worker's records go: dtrun's store and the round's key prefix,
// from DTRUN_RECORDS_HOST, DTRUN_RECORDS_PORT and DTRUN_RECORDS_PREFIX.
struct RecordsLocation {
  std::string host;
  std::uint16_t port = 0;
  std::string prefix;
};
inline constexpr const char* kRecordsHostVariable = "DTRUN_RECORDS_HOST";
inline constexpr const char* kRecordsPortVariable = "DTRUN_RECORDS_PORT";
inline constexpr const char* kRecordsPrefixVariable = "DTRUN_RECORDS_PREFIX";
// nullopt outside dtrun, or when a variable is missing or malformed.
std::optional<RecordsLocation> records_location();

}  // namespace dtrain::store
