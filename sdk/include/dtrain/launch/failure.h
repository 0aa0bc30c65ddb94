// How a worker ended, and the record of the first failure of a round that
// every agent reads to print the job's summary: which rank, on which node,
// its exit code or signal, and the last lines it wrote; beside it, what the
// workers themselves recorded (dtrain/store/job_records.h), from which the
// summary names the likely cause and where each rank was. Nothing here
// reads the wording of a worker's output.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dtrain/store/job_records.h"
#include "dtrain/util/exit_status.h"

namespace dtrain::launch {

struct WorkerFailure {
  int rank = -1;
  int local_rank = -1;
  int group_rank = -1;
  std::string host;
  util::ExitStatus status;
  // When its agent saw it end (wall clock, ms since the epoch): the agents
  // wake on worker exits, so the earliest of a round's failures is the one
  // that happened first, give or take the nodes' clock skew.
  std::int64_t time_ms = 0;
  std::string log_tail;  // last lines of the worker's output, may be empty
};

std::string encode(const WorkerFailure& failure);
// nullopt when `text` is not an encoded failure.
std::optional<WorkerFailure> decode_failure(const std::string& text);

// What a round's workers recorded in the store: their failed collectives
// and their flight recorders' last collectives (either may be missing).
struct JobRecords {
  std::vector<store::FailureRecord> failures;
  std::vector<store::ProgressRecord> progress;
};

// The multi-line summary printed when the job fails: "likely cause" lines
// first, naming the ranks that never reached a collective in which other
// ranks timed out, each with where its flight recorder last saw it (the
// first failure is then only a victim); a table of where every rank was;
// the earliest of `failures` (non-empty), with its output's tail; one line
// for each other worker that failed on its own in the same round; and the
// last lines of each likely cause found in `tails` (by rank: the workers
// this node ran).
std::string format_failure_summary(std::vector<WorkerFailure> failures, int restarts,
                                   int max_restarts, const JobRecords& records = {},
                                   const std::map<int, std::string>& tails = {});

// The summary's "likely cause" lines alone, "  likely cause: rank(s) 2
// never reached all_reduce(SUM) (#2 on group 'default'), in which rank(s)
// 0, 1 timed out", one for each collective the failure records name, each
// followed by where its ranks were last (empty when they name none); dtrun
// also logs them when it restarts.
std::string format_likely_causes(const JobRecords& records);

// The table of where the ranks were, one row per rank with a progress
// record, marking the ranks that never reached a failed collective; empty
// without progress records.
std::string format_divergence(const JobRecords& records);

// The last `lines` lines of `text` (without a trailing empty line).
std::string last_lines(const std::string& text, int lines);

// What a failed worker's summary quotes of its output: the last `lines`
// lines; but when they hold only part of a crash trace (a "fatal signal"
// header, util/crash_trace.h, followed by its frames), the trace from its
// header on (from the report of the uncaught exception above it, when an
// abort came from one), at most `trace_lines` lines of it: the top frames
// say where it crashed, the bottom ones only how main was reached.
std::string failure_tail(const std::string& text, int lines, int trace_lines);

}  // namespace dtrain::launch
