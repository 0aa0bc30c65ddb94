// Horovod's DistributedOptimizer for LibTorch: wraps any
// torch::optim::Optimizer; gradients are fused into buckets and averaged
// over the group while backward runs, and step() applies them.
//
//   auto sgd = std::make_shared<torch::optim::SGD>(model->parameters(), 0.01);
//   dtrain::ddp::DistributedOptimizer optimizer(sgd, {.backward_passes_per_step = 2});
//   dtrain::ddp::broadcast_parameters(*model, 0);
//   dtrain::ddp::broadcast_optimizer_state(*sgd, 0);
//   for (...) {
//     optimizer.zero_grad();
//     for (int k = 0; k < 2; ++k) loss_of(batch[k]).backward();  // accumulate, then reduce
//     optimizer.step();
//   }
//
// Unlike DistributedDataParallel there is no forward hook: a reduction
// starts at the first gradient of a backward pass and averages over the
// world size. With backward_passes_per_step = k the first k-1 passes
// accumulate locally and the k-th reduces the accumulated sum while it
// runs; step() (through synchronize()) reduces whatever is still local, so
// a step after fewer or more than k passes applies the exact average too,
// and the count starts again at every step. As in Horovod, a parameter
// that got no gradient in a reduced pass (a branch this rank did not take)
// takes part with zeros, or with what earlier passes accumulated in it.
//
// Clipping, or a GradScaler, needs the averaged gradients before the step:
//   optimizer.synchronize();                       // as Horovod's
//   torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
//   optimizer.step();                              // nothing left to reduce
//   // or: scaler.step(optimizer.optimizer()) after synchronize()
#pragma once

#include <cstdint>
#include <memory>

#include "dtrain/ddp/comm_hook.h"
#include "dtrain/ddp/reducer.h"
#include "dtrain/dist/process_group.h"

namespace torch::optim {
class Optimizer;
}

namespace dtrain::ddp {

struct DistributedOptimizerOptions {
  int backward_passes_per_step = 1;
  // Gradient compression (Horovod's Compression.fp16): compression_hook(at::kHalf).
  std::shared_ptr<CommHook> compression;
  // Fusion buffer size, in MiB (Horovod's HOROVOD_FUSION_THRESHOLD default, 64).
  double fusion_mb = 64.0;
};

class DistributedOptimizer {
 public:
  // `group` nullptr: the default group. Every rank must wrap optimizers
  // over the same parameters, in the same order: construction is a
  // collective that checks the ranks agree on the parameters' number,
  // shapes, dtypes and requires_grad, and throws dtrain::Error on every
  // rank, naming the first difference, when they do not. Parameters that
  // do not require grad (frozen) are skipped, as Horovod does: they get no
  // gradient and take no part in the reductions. Throws when no parameter
  // requires grad.
  explicit DistributedOptimizer(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                DistributedOptimizerOptions options = {},
                                dist::ProcessGroupPtr group = nullptr);

  // Averages the gradients still local (see above); a collective. Leaves
  // nothing to reduce, so the step that follows only applies them.
  void synchronize();
  // synchronize(), then the wrapped optimizer's step. Throws when no
  // backward pass ran since the last step (it would apply stale
  // gradients, and the ranks' collectives could fall out of step).
  void step();
  void zero_grad(bool set_to_none = true);

  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  Reducer& reducer() { return *reducer_; }

 private:
  std::shared_ptr<torch::optim::Optimizer> optimizer_;
  DistributedOptimizerOptions options_;
  std::unique_ptr<Reducer> reducer_;
  std::int64_t passes_at_last_step_ = 0;
};

}  // namespace dtrain::ddp
