// ProcessGroup: the one interface over every communication backend (Gloo
// for CPU tensors now; NCCL and MPI implement the same interface).
//
// Every operation returns a Work at once and runs asynchronously, in the
// order it was issued; call wait() on it (or use the blocking free
// functions in init.h). All ranks of the group must issue the same
// collectives in the same order with tensors of the same shape and dtype.
// An operation a backend lacks throws "backend X does not support Y".
// Thread-safe: operations may be issued from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "dtrain/dist/types.h"
#include "dtrain/dist/work.h"

namespace dtrain::dist {

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

  // Point to point (the tensor must stay alive and untouched until wait()).
  virtual WorkPtr send(const at::Tensor& tensor, int dst, int tag = 0);
  virtual WorkPtr recv(at::Tensor& tensor, int src, int tag = 0);

  virtual WorkPtr broadcast(at::Tensor& tensor, const BroadcastOptions& options = {});
  virtual WorkPtr all_reduce(at::Tensor& tensor, const AllreduceOptions& options = {});
  // The result lands in `tensor` on the root; other ranks' tensors are unchanged.
  virtual WorkPtr reduce(at::Tensor& tensor, const ReduceOptions& options = {});
  // outputs: `size` tensors shaped like input.
  virtual WorkPtr all_gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                             const CollectiveOptions& options = {});
  // outputs: `size` tensors on the root, ignored elsewhere.
  virtual WorkPtr gather(std::vector<at::Tensor>& outputs, const at::Tensor& input,
                         const RootOptions& options = {});
  // inputs: `size` tensors on the root, ignored elsewhere.
  virtual WorkPtr scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                          const RootOptions& options = {});
  // inputs: `size` tensors shaped like output; output gets the reduction of block `rank`.
  virtual WorkPtr reduce_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                 const AllreduceOptions& options = {});
  // inputs[i] goes to rank i; outputs[i] comes from rank i.
  virtual WorkPtr all_to_all(std::vector<at::Tensor>& outputs,
                             const std::vector<at::Tensor>& inputs,
                             const CollectiveOptions& options = {});
  virtual WorkPtr barrier(const CollectiveOptions& options = {});

 protected:
  [[noreturn]] void unsupported(const std::string& op) const;
  // "all_reduce on group 'default' (gloo), rank 1 of 4": the prefix of every error.
  std::string describe(const std::string& op) const;

 private:
  int rank_;
  int size_;
  std::string name_;
  std::vector<int> global_ranks_;
};

using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

}  // namespace dtrain::dist
