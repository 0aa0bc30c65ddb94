// The module-independent half of DistributedDataParallel: construction
// checks and broadcasts, the pre- and post-forward steps, no_sync and join.
// distributed_data_parallel.h wraps it around a module holder.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "dtrain/ddp/options.h"
#include "dtrain/ddp/reducer.h"
#include "dtrain/dist/process_group.h"

namespace torch::nn {
class Module;
}

namespace dtrain::ddp {

class DdpEngine {
 public:
  // A collective: checks that every rank holds the same parameter shapes
  // and freezes the same parameters, broadcasts rank 0's parameters and
  // buffers, and builds the reducer. A parameter shared by submodules
  // counts once.
  DdpEngine(std::shared_ptr<torch::nn::Module> module, DdpOptions options,
            dist::ProcessGroupPtr group);

  // Before a forward. With grad enabled (in train or eval mode, as
  // PyTorch's DDP decides): the join round, the buffer broadcast and the
  // reducer's iteration start. `samples` is the local batch size (needed
  // for sample-count averaging). No-grad forwards run no collectives, so
  // one rank may evaluate alone.
  void pre_forward(std::optional<std::int64_t> samples);
  // After a forward: hands the outputs to the unused-parameter search.
  void post_forward(const std::vector<at::Tensor>& outputs);

  // Runs `train_loop`, then keeps this rank matching the collectives of
  // ranks still training (contributing zero gradients and zero samples)
  // until every rank has finished; finally every rank takes the parameters
  // and buffers of a rank that trained to the end. Every rank must call it.
  // Refused for a module holding SyncBatchNorm, whose own collectives the
  // ranks that ran out of data cannot answer.
  void join(const std::function<void()>& train_loop);

  Reducer& reducer() { return *reducer_; }
  const DdpOptions& options() const { return options_; }
  const dist::ProcessGroupPtr& group() const { return group_; }
  // Overrides the batch size DistributedDataParallel infers from the first
  // tensor argument, for the next forward only.
  void set_next_samples(std::int64_t samples) { next_samples_ = samples; }

 private:
  bool synchronized_forward() const;
  void broadcast_buffers(int root);
  int join_round(bool training);

  std::shared_ptr<torch::nn::Module> module_;
  DdpOptions options_;
  dist::ProcessGroupPtr group_;
  std::vector<at::Tensor> buffers_;
  std::unique_ptr<Reducer> reducer_;
  bool join_active_ = false;
  bool forward_prepared_ = false;
  std::optional<std::int64_t> next_samples_;
};

}  // namespace dtrain::ddp
