#include "dtrain/ddp/distributed_optimizer.h"

#include <cmath>

#include <fmt/format.h>
#include <torch/optim/optimizer.h>

#include "dtrain/ddp/broadcast.h"
#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"

namespace dtrain::ddp {

DistributedOptimizer::DistributedOptimizer(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                           DistributedOptimizerOptions options,
                                           dist::ProcessGroupPtr group)
    : optimizer_(std::move(optimizer)), options_(std::move(options)) {
  DTRAIN_CHECK(optimizer_ != nullptr, "DistributedOptimizer: the optimizer is null");
  DTRAIN_CHECK(
      std::isfinite(options_.fusion_mb) && options_.fusion_mb > 0,
      fmt::format("DistributedOptimizer: fusion_mb must be positive, got {}", options_.fusion_mb));
  dist::ProcessGroupPtr pg = group ? std::move(group) : dist::default_group();
  std::vector<at::Tensor> all_parameters;
  std::vector<std::string> all_names;
  const auto& groups = optimizer_->param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t p = 0; p < groups[g].params().size(); ++p) {
      all_parameters.push_back(groups[g].params()[p]);
      all_names.push_back(fmt::format("param_groups[{}].params[{}]", g, p));
    }
  }
  // The buckets are laid out from these shapes on each rank: ranks that
  // disagree would all-reduce buffers of different sizes, which Gloo
  // answers by aborting the process. Two small all_gathers, at construction
  // only.
  verify_same_parameters("DistributedOptimizer", all_names, all_parameters, pg);
  // Frozen parameters get no gradient: skipped, as Horovod does. The check
  // above makes every rank skip the same ones.
  std::vector<at::Tensor> parameters;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < all_parameters.size(); ++i) {
    if (all_parameters[i].requires_grad()) {
      parameters.push_back(std::move(all_parameters[i]));
      names.push_back(std::move(all_names[i]));
    }
  }
  ReducerOptions reducer_options;
  // Horovod fuses whatever is ready into one buffer; one cap for all buckets.
  reducer_options.bucket_bytes =
      static_cast<std::size_t>(std::max(1.0, options_.fusion_mb * 1024.0 * 1024.0));
  reducer_options.first_bucket_bytes = reducer_options.bucket_bytes;
  reducer_options.backward_passes_per_step = options_.backward_passes_per_step;
  reducer_options.comm_hook = options_.compression;
  reducer_options.reduce_missing_gradients = true;
  reducer_ = std::make_unique<Reducer>(std::move(parameters), std::move(names), std::move(pg),
                                       std::move(reducer_options));
}

void DistributedOptimizer::synchronize() {
  reducer_->synchronize();
}

void DistributedOptimizer::step() {
  const std::int64_t passes = reducer_->backward_passes();
  DTRAIN_CHECK(passes > passes_at_last_step_,
               "DistributedOptimizer::step: no backward pass since the last step, so there are "
               "no fresh gradients to apply; call backward() before each step()");
  passes_at_last_step_ = passes;
  reducer_->synchronize();
  optimizer_->step();
}

void DistributedOptimizer::zero_grad(bool set_to_none) {
  optimizer_->zero_grad(set_to_none);
}

}  // namespace dtrain::ddp
