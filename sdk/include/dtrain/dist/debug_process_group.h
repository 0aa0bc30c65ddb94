// DebugProcessGroup: desync detection for any backend (Gloo, NCCL, MPI).
//
// Opt in with DTRAIN_DIST_DEBUG=1 (read once, when a group is created by
// init_process_group or new_group, which then wrap the backend's group in
// this decorator). Before each collective, every rank publishes a
// fingerprint -- sequence number, op, reduce op, root, dtypes and shapes --
// in the store under "group/<name>/debug/<seq>/<rank>", then waits (up to
// the operation's timeout, else the group's) for every other rank's
// fingerprint of the same sequence number. If they differ, every rank
// raises CollectiveError before running the collective, e.g.
//
//   collective #7 mismatch: rank 0 called all_reduce(SUM) float32[4],
//   rank 1 called broadcast(root 0) float32[4]
//
// and a rank that never arrives makes the others raise
// CollectiveTimeoutError naming it. Point-to-point send/recv pass through
// unchecked (only two ranks take part). Costs one store round trip per
// collective: a debugging aid, not for production runs.
// Thread-safe like the group it wraps; collectives must be issued in one
// order per rank (as always).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dtrain/dist/process_group.h"
#include "dtrain/dist/store_names.h"

namespace dtrain::dist {

// True when DTRAIN_DIST_DEBUG is "1".
bool dist_debug_enabled();

// Returns `group` wrapped in a DebugProcessGroup when dist_debug_enabled(),
// else `group` itself (nullptr stays nullptr).
ProcessGroupPtr wrap_for_debug_if_enabled(ProcessGroupPtr group, std::shared_ptr<Store> store,
                                          std::chrono::milliseconds timeout);

// "all_reduce(SUM) float32[4]": what a rank called, as it appears in errors.
std::string describe_call(const std::string& op, const std::vector<at::Tensor>& tensors);

// Sits on the ProcessGroup front end like any group: its operations are
// checked as the wrapped group's are, compared across ranks (check_call),
// then run on the wrapped group's transport.
class DebugProcessGroup : public ProcessGroup {
 public:
  // `store`: shared by every rank of the group (the job's store);
  // `timeout`: how long to wait for the other ranks' fingerprints.
  DebugProcessGroup(ProcessGroupPtr inner, std::shared_ptr<Store> store,
                    std::chrono::milliseconds timeout);

  std::string backend_name() const override { return inner_->backend_name(); }
  const ProcessGroupPtr& inner() const { return inner_; }

 protected:
  // Publishes this rank's fingerprint and compares it with every rank's;
  // throws CollectiveError on a mismatch, CollectiveTimeoutError when a rank
  // does not arrive in time.
  void check_call(c10::function_ref<std::string()> call,
                  std::chrono::milliseconds timeout) override;

 private:
  ProcessGroupPtr inner_;
  std::shared_ptr<Store> store_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;  // one check at a time, so sequence numbers follow issue order
  std::int64_t seq_ = 0;
};

}  // namespace dtrain::dist
