// Transport: what a backend (Gloo, MPI, NCCL) implements under the
// ProcessGroup front end -- how bytes move, and nothing else.
//
// The front end (process_group.cpp) does for every backend what is the
// same: it names the operation, checks its arguments, resolves its timeout,
// stages tensors on the other device, makes tensors contiguous and copies
// results back, flattens lists into one buffer and splits it again, divides
// AVG where the transport lacks it, numbers collectives, and runs the
// desync hook. A transport then gets checked, contiguous, flat tensors
// and an OpContext, one call per collective, as nccl-tests keeps one
// harness and one short piece per collective.
//
// Where the front end's work runs: an operation is issued with launch(),
// which runs its AtIssue part at once and its InTurn part in issue order,
// where the transport orders its work (a CPU backend's worker thread; for
// NCCL, the communicator's stream, with both parts run at the call), or,
// for one with nothing to do at issue, with run_now(), which may run it at
// once. The table's collectives are called from inside an InTurn part only.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dtrain/dist/store_names.h"
#include "dtrain/dist/types.h"
#include "dtrain/dist/work.h"

namespace dtrain::dist {
class ProcessGroup;
}

namespace dtrain::dist::detail {

// What the front end hands a transport with every operation.
struct OpContext {
  std::string op;    // "all_reduce(SUM)", "send to rank 1"
  std::string what;  // "all_reduce(SUM) on group 'default' (gloo), rank 1 of 4": prefixes errors
  std::chrono::milliseconds timeout{0};  // the caller's, else the group's default
  std::int64_t seq = 0;  // the collective's number on its group (1, 2, ...); 0 for send and recv
  std::int64_t record_id = 0;  // its flight recorder entry (flight_recorder.h); 0 for none
};

// The part of an operation that runs in its turn; see above.
using InTurn = std::function<void(const OpContext&)>;
// The same, borrowed for a turn taken at the call.
using InTurnRef = c10::function_ref<void(const OpContext&)>;
// The part that runs when the operation is issued; returns its InTurn part.
// Inputs are copied here, so an operation sends them as they were at the call.
using AtIssue = std::function<InTurn()>;

// Runs an operation's InTurn part, its flight recorder entry (if any)
// marked started, then finished or failed: transports call their InTurn
// parts through it.
void run_in_turn(InTurnRef in_turn, const OpContext& ctx);

// An operation with nothing to do at issue. Its AtIssue runs once, so it
// hands over its InTurn rather than a copy.
inline AtIssue in_turn_only(InTurn in_turn) {
  return [in_turn = std::move(in_turn)]() mutable { return std::move(in_turn); };
}

// What a backend declares once; the front end's checks and staging follow it.
struct TransportTraits {
  c10::DeviceType device = c10::kCPU;  // the tensors it moves
  // Tensors on this device are staged through staging_device() for
  // broadcast, all_reduce, reduce and all_gather (Note [Tensors on a
  // device the backend does not move], collective_args.h).
  std::optional<c10::DeviceType> stages_from = std::nullopt;
  // A tensor on another device is refused with "<takes>, got one on
  // <device> (<advice>)".
  std::string takes{};
  std::string advice{};
  bool reduces_avg = false;  // else the front end reduces SUM and divides
  // all_to_all's blocks may differ in size (one dtype); else every block
  // has the shape of inputs[0].
  bool uneven_all_to_all = false;
  std::chrono::milliseconds timeout{0};  // an operation's, when it gives none
};

// The number of elements of each rank's block of all_to_all, in and out.
struct BlockSizes {
  std::vector<std::int64_t> in;
  std::vector<std::int64_t> out;
};

class Transport {
 public:
  explicit Transport(TransportTraits traits) : traits_(std::move(traits)) {}
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const TransportTraits& traits() const { return traits_; }

  // Numbers a collective in issue order and starts it with `start`, which
  // may add to its context (its flight recorder entry); a collective whose
  // start throws takes no number. Thread-safe.
  WorkPtr numbered(OpContext ctx, c10::function_ref<WorkPtr(OpContext&)> start);

  // Where tensors on traits().stages_from are staged; throws dtrain::Error
  // (prefixed with `what`) when there is no such device.
  virtual c10::Device staging_device(const std::string& what);
  // A backend's own limits, checked at the call: how many elements (a
  // tensor's bytes, for send and recv) one call may move, and the tags
  // it takes (any tag >= 0, unless overridden).
  virtual void check_size(std::int64_t /*count*/, const std::string& /*what*/) const {}
  virtual void check_tag(int tag, const std::string& what) const;

  // Issues an operation: AtIssue now, InTurn in issue order. The Work
  // finishes when InTurn has run (or failed). `tensors` are the caller's
  // tensors it reads or writes, all on one device.
  virtual WorkPtr launch(const OpContext& ctx, std::vector<at::Tensor> tensors,
                         const AtIssue& at_issue) = 0;
  // Runs an operation with nothing to do at issue at the call, in its turn,
  // and returns its finished Work, where the transport may take the turn
  // now (Note [A turn taken at the call], work_queue.h); else nullptr, and
  // the operation is launched. By default, never.
  virtual WorkPtr run_now(const OpContext& /*ctx*/, InTurnRef /*in_turn*/) { return nullptr; }

  // The table of collectives, called from an InTurn part. Tensors are
  // contiguous and of one dtype; `op` is never AVG unless reduces_avg.
  // A flat buffer holds one block per rank, in rank order; `out` of gather
  // and `in` of scatter are undefined except on the root. The transport's
  // errors raise; the front end's Work reports them.
  virtual void broadcast(at::Tensor& data, int root, const OpContext& ctx) = 0;
  virtual void all_reduce(at::Tensor& data, ReduceOp op, const OpContext& ctx) = 0;
  // The result lands in `data` on the root; the others' `data` is unchanged.
  virtual void reduce(at::Tensor& data, ReduceOp op, int root, const OpContext& ctx) = 0;
  virtual void all_gather(const at::Tensor& in, at::Tensor& out, const OpContext& ctx) = 0;
  virtual void gather(const at::Tensor& in, at::Tensor& out, int root, const OpContext& ctx) = 0;
  virtual void scatter(const at::Tensor& in, at::Tensor& out, int root, const OpContext& ctx) = 0;
  // `in` holds every rank's block and may be overwritten; `out` gets ours.
  virtual void reduce_scatter(at::Tensor& in, at::Tensor& out, ReduceOp op,
                              const OpContext& ctx) = 0;
  virtual void all_to_all(const at::Tensor& in, at::Tensor& out, const BlockSizes& blocks,
                          const OpContext& ctx) = 0;

  // Operations a transport issues itself (no InTurn part of the front end).
  virtual WorkPtr barrier(const OpContext& ctx) = 0;
  virtual WorkPtr send(const at::Tensor& data, int dst, int tag, const OpContext& ctx) = 0;
  virtual WorkPtr recv(at::Tensor& data, int src, int tag, const OpContext& ctx) = 0;

 private:
  TransportTraits traits_;
  std::mutex issue_mutex_;
  std::int64_t collectives_ = 0;  // numbered so far, under issue_mutex_
};

// What a timeout of collective `ctx` of `group` appends to its error: the
// ranks that never reached it (Note [Which rank a timeout waited on],
// timeout_diagnosis.h), asked of `store`. Empty without a store.
std::string diagnose_timeout(const std::shared_ptr<Store>& store, const ProcessGroup& group,
                             const OpContext& ctx);

// The per-rank lists c10d's gather and scatter take for the root's side:
// on the root, one list of `all`'s `size` flat blocks (views); elsewhere
// none.
std::vector<std::vector<at::Tensor>> root_blocks(const at::Tensor& all, int rank, int root,
                                                 int size);

}  // namespace dtrain::dist::detail
