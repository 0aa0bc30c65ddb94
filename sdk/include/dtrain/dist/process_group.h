// ProcessGroup: the one interface over every communication backend (Gloo
// for CPU tensors, NCCL for CUDA tensors, MPI under mpirun).
//
// Every operation returns a Work at once and runs asynchronously, in the
// order it was issued; call wait() on it (or use the blocking free
// functions in init.h). All ranks of the group must issue the same
// collectives in the same order with tensors of the same shape and dtype.
// Thread-safe: operations may be issued from any thread.
//
// Errors: a bad argument (a root or peer outside the group, a dtype or
// device the backend does not move, lists of the wrong length or shapes,
// AVG of integers) raises dtrain::Error at the call, naming the op, the
// group, the rank and the argument, before any peer is contacted. A failure
// while the operation runs (a peer died, the transport broke) raises
// CollectiveError from Work::wait(); one that does not finish in its
// timeout, CollectiveTimeoutError.
//
// These methods are one front end for every backend: it checks arguments,
// names the operation, resolves its timeout, stages tensors on a device
// the backend does not move, and hands the backend contiguous buffers
// (src/dist/transport.h); a backend implements only how bytes move.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/FunctionRef.h>

#include "dtrain/dist/types.h"
#include "dtrain/dist/work.h"

namespace dtrain::dist {

namespace detail {
class Transport;
struct OpContext;
}  // namespace detail

class ProcessGroup {
 public:
  ProcessGroup(int rank, int size, std::string name);
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  // The group's own rank and size: what every method here takes as a root
  // or peer (as c10d's ProcessGroup does).
  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return name_; }
  virtual std::string backend_name() const = 0;

  // The ranks in the default group of this group's members, by group rank:
  // what the free functions of init.h take, as torch.distributed's do.
  // new_group records them; any other group counts as the whole world,
  // 0 .. size - 1.
  const std::vector<int>& global_ranks() const { return global_ranks_; }
  // Called once by new_group; throws dtrain::Error unless `ranks` holds
  // `size` distinct ranks, ascending.
  void set_global_ranks(std::vector<int> ranks);

  // Point to point (the tensor must be contiguous, and stay alive and
  // untouched until wait()). `tag` >= 0 (the mpi backend: up to MPI_TAG_UB).
  WorkPtr send(const at::Tensor& tensor, int dst, int tag = 0);
  WorkPtr recv(at::Tensor& tensor, int src, int tag = 0);

  // broadcast, all_reduce, reduce and all_gather also take tensors on the
  // device the backend stages (Gloo: CUDA, NCCL: CPU); such a call returns
  // finished.
  WorkPtr broadcast(at::Tensor& tensor, const BroadcastOptions& options = {});
  WorkPtr all_reduce(at::Tensor& tensor, const AllreduceOptions& options = {});
  // The result lands in `tensor` on the root; other ranks' tensors are unchanged.
  WorkPtr reduce(at::Tensor& tensor, const ReduceOptions& options = {});
  // outputs: `size` tensors shaped like input.
  WorkPtr all_gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                     const CollectiveOptions& options = {});
  // outputs: `size` tensors on the root, ignored elsewhere.
  WorkPtr gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                 const RootOptions& options = {});
  // inputs: `size` tensors on the root, ignored elsewhere.
  WorkPtr scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                  const RootOptions& options = {});
  // inputs: `size` tensors shaped like output; output gets the reduction of block `rank`.
  WorkPtr reduce_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                         const AllreduceOptions& options = {});
  // inputs[i] goes to rank i; outputs[i] comes from rank i. Every tensor
  // has the shape of inputs[0] (on NCCL, only its dtype).
  WorkPtr all_to_all(std::vector<at::Tensor>& outputs, const std::vector<at::Tensor>& inputs,
                     const CollectiveOptions& options = {});
  WorkPtr barrier(const CollectiveOptions& options = {});

 protected:
  [[noreturn]] void unsupported(const std::string& op) const;
  // "all_reduce on group 'default' (gloo), rank 1 of 4": the prefix of every error.
  std::string describe(const std::string& op) const;

  // For backends, once, in the constructor: what moves this group's bytes.
  // It must outlive every operation issued on the group.
  void set_transport(detail::Transport& transport);
  // For a group that wraps another (DebugProcessGroup): its operations go
  // through `inner`'s transport, numbered with inner's own.
  void use_transport_of(const ProcessGroup& inner);

  // Runs before each collective, once its arguments passed their checks:
  // `call` says what it is ("all_reduce(SUM) float32[4]", describe_call in
  // debug_process_group.h); `timeout` is the caller's (zero: none given).
  // DebugProcessGroup compares calls across ranks here; by default nothing.
  virtual void check_call(c10::function_ref<std::string()> call, std::chrono::milliseconds timeout);

 private:
  detail::Transport& transport() const;
  // The op's name and description, and the timeout it runs under.
  detail::OpContext context(std::string op, std::chrono::milliseconds timeout) const;
  // broadcast, all_reduce and reduce: one tensor, sent or reduced in place.
  enum class InPlace { kBroadcast, kAllReduce, kReduce };
  WorkPtr in_place(at::Tensor& tensor, InPlace kind, ReduceOp op, int root,
                   std::chrono::milliseconds timeout);
  // gather and scatter: `tensor` on every rank, `list` of a tensor per rank on the root.
  enum class Rooted { kGather, kScatter };
  WorkPtr rooted(Rooted kind, const at::Tensor& tensor, const std::vector<at::Tensor>& list,
                 const RootOptions& options);

  int rank_;
  int size_;
  std::string name_;
  std::vector<int> global_ranks_;
  // describe()'s part after the op, built at its first call.
  mutable std::once_flag described_once_;
  mutable std::string described_as_;
  detail::Transport* transport_ = nullptr;
};

using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

}  // namespace dtrain::dist
