// Naming the ranks a timed-out collective waited on.
//
// Note [Which rank a timeout waited on]
// A transport timeout names only the pair that gave up ("Timed out waiting
// 5000ms for recv operation"), so the rank that reports it is usually a
// victim, and the rank that stopped, hung or went elsewhere is named
// nowhere. Finding it must cost nothing while collectives succeed, so no
// rank writes anything until one times out. Then each rank that timed out
// writes `timeout/<rank>` = "<seq> <op>" in the group's store (seq counts
// the group's collectives on that rank) and, for a short bounded grace,
// reads the other ranks' reports: the ranks alive and in the same
// collective time out too and report the same seq; a rank in another
// collective reports another seq; a stopped, hung, dead or busy rank
// reports nothing, and is the one named. The store may be hosted by a
// stopped process, so every store call runs on its own thread and is
// abandoned at the deadline; the diagnosis is appended to the transport's
// error, never in its place. The ranks it names also go, as numbers, into
// the rank's failure record (dtrain/store/job_records.h), which is what
// dtrun reads: the words here are for people.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/dist/store_names.h"

namespace dtrain::dist::detail {

// How long a rank whose collective timed out waits for its peers' reports:
// the collective's timeout, at most 2 s.
std::chrono::milliseconds diagnosis_grace(std::chrono::milliseconds timeout);

// What a diagnosis found: the text to append to the error, and the global
// ranks of the group that did not reach the collective.
struct Diagnosis {
  std::string text;
  std::vector<int> missing;
};

// Reports that group rank `rank` timed out in its collective number `seq`,
// `op` (e.g. "all_reduce(SUM)") of group `group`, whose members are
// `global_ranks` (by group rank), reads the others' reports for up to
// `grace`, and says which ranks did not reach it, and where the others were
// (group ranks, with the global rank where it differs). Never throws; never
// takes much longer than `grace` (a store that does not answer is said so).
Diagnosis diagnose_timeout(const std::shared_ptr<Store>& store, const std::string& group, int rank,
                           const std::vector<int>& global_ranks, std::int64_t seq,
                           const std::string& op, std::chrono::milliseconds grace);

}  // namespace dtrain::dist::detail
