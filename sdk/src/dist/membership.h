// The check that the processes meeting in a store make one job, run by
// init_process_group before any group is built.
#pragma once

#include <chrono>
#include <string>

#include "dtrain/dist/store_names.h"

namespace dtrain::dist {

// Note [One build per job]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Every process of a job must run the same dtrain and LibTorch. DDP's
// bucket order, the keys the groups meet under in the store and the layout
// of what the backends exchange are dtrain's own and change between its
// versions; the distributed sampler's epoch order is at::randperm's, which
// LibTorch may change between its versions. Two builds in one job could
// hang in a collective only one of them makes, or, worse, train on shards
// that overlap. A node with an old install or a stale build folder is an
// easy mistake on a cluster, and torch.distributed leaves it to the user.
//
// So each process brings its build's identity (util::BuildInfo::identity():
// dtrain's version and source revision, LibTorch's version; not whether
// CUDA is compiled in, since a job may mix machines). The first to arrive
// records its identity in the store; a process with another one records
// "rank R runs X" under a numbered key *before* it claims its rank. Every
// process waits for all ranks' claims anyway, so once that wait is over
// every record of a mismatch is visible, and every rank fails with the same
// message, naming the builds and the ranks that run them. With
// DTRAIN_ALLOW_MIXED_BUILDS=1 (builds known to be compatible, as during a
// rolling upgrade) rank 0 logs the same message as a warning instead.
struct MemberOptions {
  int rank = 0;
  int world_size = 1;
  std::string build;                // util::build_info().identity(), or a test's own
  bool allow_mixed_builds = false;  // util::mixed_builds_allowed()
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  // Added to a conflict's message: what to do when the rival is a previous
  // job's record rather than a live process (a file:// store left behind).
  std::string stale_hint{};
  // Whether the store lives in this process (rank 0's TcpStore), so that it
  // goes away when this process fails (Note [A conflict at rendezvous]).
  bool hosts_store = false;
};

// Checks, through `store`, that the world agrees: one world size, every rank
// claimed exactly once, all ranks present within the timeout. Throws
// dtrain::Error (CollectiveTimeoutError for ranks that never came) naming
// what disagreed; a disagreement found by one process is raised by every
// process still waiting, too (Note [A conflict at rendezvous] in
// membership.cpp). Records `me.build` on the way, for check_one_build.
void check_membership(Store& store, const MemberOptions& me);

// After check_membership: throws dtrain::Error on every rank, naming the
// builds and their ranks, when not all run `me.build` (Note [One build per
// job]); with `me.allow_mixed_builds`, rank 0 logs that as a warning. A
// store that fails meanwhile (rank 0 gone, no verdict within the timeout)
// raises CollectiveError saying what the rank was waiting for.
void check_one_build(Store& store, const MemberOptions& me);

}  // namespace dtrain::dist
