#include "dtrain/ddp/ddp_engine.h"

#include <cmath>
#include <set>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/nn/module.h>

#include "dtrain/ddp/broadcast.h"
#include "dtrain/ddp/sync_batch_norm.h"
#include "dtrain/util/errors.h"

namespace dtrain::ddp {
namespace {

std::size_t megabytes_to_bytes(double megabytes, const char* option) {
  DTRAIN_CHECK(
      std::isfinite(megabytes) && megabytes > 0,
      fmt::format("DdpOptions::{} must be a positive number of MiB, got {}", option, megabytes));
  return static_cast<std::size_t>(std::max(1.0, megabytes * 1024.0 * 1024.0));
}

}  // namespace

DdpEngine::DdpEngine(std::shared_ptr<torch::nn::Module> module, DdpOptions options,
                     dist::ProcessGroupPtr group)
    : module_(std::move(module)), options_(std::move(options)), group_(std::move(group)) {
  DTRAIN_CHECK(module_ != nullptr, "DistributedDataParallel: the module is empty");
  DTRAIN_CHECK(group_ != nullptr, "DistributedDataParallel: process group is null");
  std::vector<std::string> names;
  std::vector<at::Tensor> parameters;
  std::vector<std::string> all_names;
  std::vector<at::Tensor> all_tensors;
  // LibTorch lists a parameter shared by two submodules under both names;
  // it is one tensor with one gradient, so it gets one slot (two would
  // reduce it twice and, with bucket views, point .grad at the wrong one).
  std::set<const c10::TensorImpl*> seen;
  for (const auto& item : module_->named_parameters()) {
    if (!seen.insert(item.value().unsafeGetTensorImpl()).second) {
      continue;
    }
    all_names.push_back(item.key());
    all_tensors.push_back(item.value());
    if (item.value().requires_grad()) {
      names.push_back(item.key());
      parameters.push_back(item.value());
    }
  }
  for (const auto& item : module_->named_buffers()) {
    all_names.push_back(item.key());
    all_tensors.push_back(item.value());
    buffers_.push_back(item.value());
  }
  verify_same_parameters("DistributedDataParallel", all_names, all_tensors, group_);
  DTRAIN_CHECK(!parameters.empty(), "DistributedDataParallel: the module has no parameter that ",
               "requires grad (it has none, or all are frozen), so there is nothing to average; ",
               "train it without the wrapper");
  broadcast_tensors(all_tensors, /*root=*/0, group_);

  ReducerOptions reducer_options;
  // The first bucket holds at most half of the gradient bytes: a model
  // smaller than first_bucket_mb (PyTorch's 1 MiB) would otherwise be one
  // bucket, launched only when backward has ended, with nothing to overlap.
  std::size_t gradient_bytes = 0;
  for (const at::Tensor& p : parameters) {
    gradient_bytes += static_cast<std::size_t>(p.numel()) * p.element_size();
  }
  reducer_options.first_bucket_bytes =
      std::min(megabytes_to_bytes(options_.first_bucket_mb, "first_bucket_mb"),
               std::max<std::size_t>(1, gradient_bytes / 2));
  reducer_options.bucket_bytes = megabytes_to_bytes(options_.bucket_cap_mb, "bucket_cap_mb");
  reducer_options.gradient_as_bucket_view = options_.gradient_as_bucket_view;
  reducer_options.averaging = options_.averaging;
  reducer_options.comm_hook = options_.comm_hook;
  reducer_options.record_timeline = options_.record_timeline;
  reducer_options.reduce_only_after_forward = true;
  reducer_ = std::make_unique<Reducer>(std::move(parameters), std::move(names), group_,
                                       std::move(reducer_options));
  reducer_->set_unused_parameter_search(options_.find_unused_parameters, options_.static_graph);
  spdlog::debug("ddp: {} parameters in {} buckets, hook {}", reducer_->parameters().size(),
                reducer_->buckets().size(),
                options_.comm_hook ? options_.comm_hook->name() : "allreduce");
}

// Grad mode alone decides, as in PyTorch's DDP: a model trained in eval
// mode (batch norm's statistics or dropout frozen) must still average its
// gradients, or the replicas drift apart without a word. Evaluation runs
// under NoGradGuard; a gradient on one rank alone (a saliency map) goes
// through the wrapped module's own forward, as `ddp.module` in PyTorch.
bool DdpEngine::synchronized_forward() const {
  return at::GradMode::is_enabled();
}

void DdpEngine::broadcast_buffers(int root) {
  if (options_.broadcast_buffers && !buffers_.empty()) {
    broadcast_tensors(buffers_, root, group_);
  }
}

// One round of join's vote: each rank still training marks its own slot.
// Returns the lowest rank still training, or -1 once none is. Buffers come
// from that rank, not rank 0: a rank that joined early holds statistics
// that stopped at its last batch (PyTorch's DDP picks a training rank too).
// While every rank trains it is rank 0, as outside join.
int DdpEngine::join_round(bool training) {
  at::Tensor votes = at::zeros({group_->size()}, at::kLong);
  if (training) {
    votes[group_->rank()] = 1;
  }
  dist::issue_and_wait([&] { return group_->all_reduce(votes); });
  const auto* vote = votes.data_ptr<std::int64_t>();
  for (int r = 0; r < group_->size(); ++r) {
    if (vote[r] != 0) {
      return r;
    }
  }
  return -1;
}

void DdpEngine::pre_forward(std::optional<std::int64_t> samples) {
  forward_prepared_ = false;
  const std::optional<std::int64_t> override = std::exchange(next_samples_, std::nullopt);
  if (!synchronized_forward()) {
    return;
  }
  int buffer_root = 0;
  if (join_active_) {
    // Ranks that ran out of data shadow synchronized steps only; they
    // cannot tell an accumulation step from one, so the collectives would
    // not match.
    DTRAIN_CHECK(reducer_->sync_enabled(),
                 "DistributedDataParallel: no_sync() inside join() is not supported (ranks that "
                 "ran out of data cannot follow gradient accumulation); accumulate outside "
                 "join(), or give every rank the same number of batches");
    buffer_root = join_round(/*training=*/true);
  }
  broadcast_buffers(buffer_root);
  const std::optional<std::int64_t> local = override ? override : samples;
  DTRAIN_CHECK(local.has_value() || options_.averaging != GradientAveraging::kSampleCount,
               "sample-count averaging: the forward's first argument is not a batch tensor; "
               "call set_next_samples(n) before the forward");
  reducer_->prepare_for_forward(local.value_or(0));
  forward_prepared_ = reducer_->sync_enabled();
}

void DdpEngine::post_forward(const std::vector<at::Tensor>& outputs) {
  if (forward_prepared_) {
    reducer_->prepare_for_backward(outputs);
  }
}

void DdpEngine::join(const std::function<void()>& train_loop) {
  DTRAIN_CHECK(!join_active_, "DistributedDataParallel::join is not reentrant");
  // A joined rank answers only the collectives DDP itself issues; a
  // SyncBatchNorm's all-gathers in the others' forwards would meet the
  // wrong collective on it (PyTorch documents the same limit).
  for (const auto& named : module_->named_modules()) {
    DTRAIN_CHECK(dynamic_cast<const SyncBatchNormImpl*>(named.value().get()) == nullptr,
                 fmt::format("DistributedDataParallel::join: the module holds a SyncBatchNorm "
                             "('{}'), whose collectives ranks that ran out of data cannot "
                             "answer; give every rank the same number of batches (drop_last, or "
                             "DistributedSampler's padding) or use BatchNorm",
                             named.key().empty() ? std::string("the module itself") : named.key()));
  }
  join_active_ = true;
  try {
    train_loop();
  } catch (...) {
    join_active_ = false;
    throw;
  }
  join_active_ = false;
  bool trained_to_the_end = false;
  for (bool first_round = true;; first_round = false) {
    const int training_rank = join_round(/*training=*/false);
    if (first_round) {
      trained_to_the_end = training_rank < 0;
    }
    if (training_rank < 0) {
      break;
    }
    broadcast_buffers(training_rank);
    reducer_->run_shadow_iteration();
  }
  // Ranks that joined early missed the last updates: everyone takes the
  // model of the highest rank that trained to the end.
  at::Tensor source = at::full({1}, trained_to_the_end ? group_->rank() : -1, at::kLong);
  dist::issue_and_wait([&] { return group_->all_reduce(source, {.op = dist::ReduceOp::kMax}); });
  broadcast_parameters(*module_, static_cast<int>(source.item<std::int64_t>()), group_);
}

}  // namespace dtrain::ddp
