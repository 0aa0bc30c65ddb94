#include "dtrain/ddp/reducer.h"

#include <algorithm>
#include <numeric>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "dtrain/ddp/bucket_assignment.h"
#include "dtrain/util/errors.h"
#include "unused_parameters.h"

namespace dtrain::ddp {
namespace {

using Clock = std::chrono::steady_clock;

// Runs `on_ready` after AccumulateGrad stored a parameter's gradient.
class GradientReadyHook : public torch::autograd::FunctionPostHook {
 public:
  explicit GradientReadyHook(std::function<void()> on_ready) : on_ready_(std::move(on_ready)) {}
  torch::autograd::variable_list operator()(
      const torch::autograd::variable_list& outputs,
      const torch::autograd::variable_list& /*inputs*/) override {
    on_ready_();
    return outputs;
  }

 private:
  std::function<void()> on_ready_;
};

std::vector<std::size_t> reverse_registration_order(std::size_t count) {
  std::vector<std::size_t> order(count);
  std::iota(order.rbegin(), order.rend(), std::size_t{0});
  return order;
}

// A tensor over `buffer`'s storage shaped like `like`, made with set_ rather
// than view(): autograd must not see it as a view, or LibTorch's
// Optimizer::zero_grad (which calls detach_() on every gradient) refuses it.
at::Tensor alias_into(const at::Tensor& buffer, std::int64_t offset, const at::Tensor& like) {
  std::vector<std::int64_t> strides(static_cast<std::size_t>(like.dim()), 1);
  for (std::int64_t d = like.dim() - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * std::max<std::int64_t>(like.size(d + 1), 1);
  }
  at::Tensor alias = at::empty({0}, buffer.options());
  alias.set_(buffer.storage(), buffer.storage_offset() + offset, like.sizes(), strides);
  return alias;
}

bool is_view_of(const at::Tensor& grad, const at::Tensor& view) {
  return grad.defined() && grad.is_alias_of(view) && grad.data_ptr() == view.data_ptr() &&
         grad.sizes() == view.sizes();
}

}  // namespace

Reducer::Reducer(std::vector<at::Tensor> parameters, std::vector<std::string> names,
                 dist::ProcessGroupPtr group, ReducerOptions options)
    : parameters_(std::move(parameters)),
      names_(std::move(names)),
      group_(std::move(group)),
      options_(std::move(options)),
      timeline_(group_ ? group_->rank() : 0) {
  DTRAIN_CHECK(group_ != nullptr, "Reducer: process group is null");
  DTRAIN_CHECK(!parameters_.empty(), "Reducer: no parameters that require grad");
  DTRAIN_CHECK(
      names_.size() == parameters_.size(),
      fmt::format("Reducer: {} names for {} parameters", names_.size(), parameters_.size()));
  DTRAIN_CHECK(options_.backward_passes_per_step >= 1,
               fmt::format("backward_passes_per_step must be >= 1, got {}",
                           options_.backward_passes_per_step));
  DTRAIN_CHECK(options_.bucket_bytes > 0 && options_.first_bucket_bytes > 0,
               "bucket caps must be positive");
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const at::Tensor& p = parameters_[i];
    DTRAIN_CHECK(p.defined() && p.requires_grad(),
                 fmt::format("parameter '{}' does not require grad", names_[i]));
    DTRAIN_CHECK(p.layout() == at::kStrided && p.is_contiguous(),
                 fmt::format("parameter '{}' must be a dense contiguous tensor", names_[i]));
  }
  hook_ = options_.comm_hook ? options_.comm_hook : allreduce_hook();
  ready_.assign(parameters_.size(), false);
  marked_unused_.assign(parameters_.size(), false);
  build_buckets(reverse_registration_order(parameters_.size()));
  register_hooks();
}

Reducer::~Reducer() {
  for (std::size_t i = 0; i < accumulators_.size(); ++i) {
    accumulators_[i]->del_post_hook(hook_keys_[i]);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  abandon_iteration_locked();
}

void Reducer::build_buckets(const std::vector<std::size_t>& order) {
  at::NoGradGuard no_grad;
  const auto assignment =
      assign_buckets(parameters_, order, options_.first_bucket_bytes, options_.bucket_bytes);
  std::vector<Bucket> buckets(assignment.size());
  slots_.assign(parameters_.size(), Slot{});
  for (std::size_t b = 0; b < assignment.size(); ++b) {
    Bucket& bucket = buckets[b];
    bucket.parameters = assignment[b];
    std::int64_t numel = 0;
    for (std::size_t p : bucket.parameters) {
      numel += parameters_[p].numel();
    }
    const at::Tensor& first = parameters_[bucket.parameters.front()];
    bucket.buffer =
        at::zeros({numel}, at::TensorOptions().dtype(first.dtype()).device(first.device()));
    std::int64_t offset = 0;
    for (std::size_t j = 0; j < bucket.parameters.size(); ++j) {
      at::Tensor& param = parameters_[bucket.parameters[j]];
      at::Tensor view = alias_into(bucket.buffer, offset, param);
      offset += param.numel();
      if (options_.gradient_as_bucket_view && param.grad().defined()) {
        view.copy_(param.grad());
        param.mutable_grad() = view;
      }
      bucket.views.push_back(std::move(view));
      slots_[bucket.parameters[j]] = Slot{b, j};
    }
    bucket.pending = bucket.parameters.size();
  }
  buckets_ = std::move(buckets);
}

void Reducer::register_hooks() {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    auto accumulator = torch::autograd::impl::grad_accumulator(parameters_[i]);
    DTRAIN_CHECK(accumulator != nullptr,
                 fmt::format("parameter '{}' is not a leaf tensor", names_[i]));
    hook_keys_.push_back(accumulator->add_post_hook(
        std::make_unique<GradientReadyHook>([this, i] { on_gradient_ready(i); })));
    accumulators_.push_back(std::move(accumulator));
  }
}

void Reducer::prepare_for_forward(std::int64_t local_samples) {
  DTRAIN_CHECK(local_samples >= 0,
               fmt::format("local sample count must be >= 0, got {}", local_samples));
  std::lock_guard<std::mutex> lock(mutex_);
  // An autograd pass that never ended: the last backward raised (in a
  // hook, the loss, or a check of this reducer's) after some of its
  // gradients had arrived. Its buckets may have been launched on this rank
  // and not on others, so the ranks' collectives are no longer in step;
  // carrying on would average nothing, or the wrong tensors. The state
  // stays, so every later forward says so too.
  DTRAIN_CHECK(!pass_active_,
               fmt::format("rank {}: the previous backward did not finish (it raised an "
                           "exception), so its gradients were not averaged and the ranks' "
                           "collectives may be out of step; construct the "
                           "DistributedDataParallel wrapper again on every rank before training "
                           "on",
                           group_->rank()));
  if (sync_enabled_) {
    begin_iteration_locked(local_samples);
  }
}

void Reducer::prepare_for_backward(const std::vector<at::Tensor>& outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!iteration_active_ || !search_unused_) {
    return;
  }
  std::vector<std::size_t> unused;
  if (static_graph_ && static_unused_) {
    unused = *static_unused_;
  } else {
    unused = detail::unreached_accumulators(outputs, accumulators_);
    if (static_graph_) {
      static_unused_ = unused;
    }
  }
  // Which parameters some rank used: those no rank used keep their .grad
  // untouched (undefined after zero_grad), as PyTorch's DDP does, so
  // optimizers skip them instead of applying a zero gradient. Launched
  // before any bucket, so every rank issues the collectives in one order.
  used_map_ = at::ones({static_cast<std::int64_t>(parameters_.size())}, at::kInt);
  for (std::size_t p : unused) {
    used_map_[static_cast<std::int64_t>(p)] = 0;
  }
  used_map_work_ = group_->all_reduce(used_map_);
  for (std::size_t p : unused) {
    if (!ready_[p]) {
      marked_unused_[p] = true;
      mark_ready_locked(p, /*has_gradient=*/false);
    }
  }
}

void Reducer::run_shadow_iteration() {
  std::lock_guard<std::mutex> lock(mutex_);
  begin_iteration_locked(/*local_samples=*/0);
  if (search_unused_) {
    // The active ranks' used-parameter vote; this rank used nothing.
    at::Tensor nothing_used = at::zeros({static_cast<std::int64_t>(parameters_.size())}, at::kInt);
    dist::issue_and_wait([&] { return group_->all_reduce(nothing_used); });
  }
  for (Bucket& bucket : buckets_) {
    bucket.buffer.zero_();
    bucket.pending = 0;
  }
  launch_ready_buckets_locked();
  for (Bucket& bucket : buckets_) {
    bucket.reduction->work->wait();
    bucket.reduction.reset();
  }
  iteration_active_ = false;
  if (!rebuilt_) {
    rebuild_pending_ = true;  // the active ranks rebuild after their first iteration too
  }
}

void Reducer::synchronize() {
  std::lock_guard<std::mutex> lock(mutex_);
  DTRAIN_CHECK(!pass_active_, "Reducer::synchronize: called inside a backward pass");
  if (unreduced_passes_ > 0) {
    if (!iteration_active_) {
      begin_iteration_locked(/*local_samples=*/0);
    }
    mark_remaining_ready_locked();
    finalize_locked();
  }
  passes_ = 0;
}

void Reducer::set_sync_enabled(bool enabled) {
  std::lock_guard<std::mutex> lock(mutex_);
  sync_enabled_ = enabled;
}

bool Reducer::sync_enabled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sync_enabled_;
}

void Reducer::set_unused_parameter_search(bool enabled, bool static_graph) {
  std::lock_guard<std::mutex> lock(mutex_);
  search_unused_ = enabled || static_graph;
  static_graph_ = static_graph;
}

std::vector<BucketInfo> Reducer::buckets() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<BucketInfo> infos;
  for (const Bucket& bucket : buckets_) {
    infos.push_back(BucketInfo{
        bucket.parameters,
        bucket.buffer.numel() * static_cast<std::int64_t>(bucket.buffer.element_size())});
  }
  return infos;
}

bool Reducer::buckets_rebuilt() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rebuilt_;
}

std::int64_t Reducer::iterations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return iterations_;
}

std::int64_t Reducer::backward_passes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_passes_;
}

void Reducer::on_gradient_ready(std::size_t param) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pass_active_) {
    begin_pass_locked();
  }
  if (!pass_reduces_) {
    return;  // no_sync or an accumulation pass: the gradient stays in .grad
  }
  if (!iteration_active_) {
    if (options_.reduce_only_after_forward) {
      return;  // no training forward announced this backward: it stays local
    }
    // DistributedOptimizer: no prepare_for_forward announced the sample count.
    DTRAIN_CHECK(
        options_.averaging == GradientAveraging::kWorld,
        "sample-count averaging: this backward has no training forward of its own "
        "through DistributedDataParallel (a second backward of one forward, a forward "
        "inside no_sync() whose backward ran outside it, or one through the wrapped module's "
        "own forward); "
        "every synchronized backward needs its own training forward");
    begin_iteration_locked(0);
  }
  if (step_events_.backward_start == TimePoint{}) {
    step_events_.backward_start = Clock::now();
  }
  if (ready_[param]) {
    // A gradient for a parameter the unused search gave up on: it was used
    // after all, and its bucket may be reduced already without it. PyTorch
    // raises here too ("marked ready twice"); staying silent would leave
    // this rank's gradient unaveraged while the replicas drift apart.
    DTRAIN_CHECK(!marked_unused_[param],
                 fmt::format("rank {}: parameter '{}' got a gradient after DistributedDataParallel "
                             "found it unused in this iteration: its use is not reachable from "
                             "the forward's output tensors (returned inside a nested container, "
                             "or used outside forward), or static_graph is set and the set of "
                             "used parameters changed. Return every tensor the loss uses from "
                             "forward (a tensor, vector or tuple of tensors), or turn "
                             "static_graph off",
                             group_->rank(), names_[param]));
    // A second gradient in one pass: a reentrant backward (a custom
    // function whose backward calls backward, as reentrant activation
    // checkpointing does) delivered one apart from the main graph. The
    // first may be reduced already, and finalize would overwrite .grad
    // with it, losing the second without a word; PyTorch raises too.
    throw Error(fmt::format(
        "rank {}: parameter '{}' received a second gradient in one backward pass: a reentrant "
        "backward (a custom function's backward that calls backward, such as reentrant "
        "activation checkpointing) delivered it apart from the main graph, and its bucket may "
        "be reduced already without it. Use non-reentrant checkpointing, or keep the "
        "parameter's uses in the one graph that backward walks",
        group_->rank(), names_[param]));
  }
  mark_ready_locked(param, /*has_gradient=*/true);
}

void Reducer::begin_pass_locked() {
  pass_active_ = true;
  ++passes_;
  ++total_passes_;
  pass_reduces_ = sync_enabled_ && passes_ % options_.backward_passes_per_step == 0;
  if (!pass_reduces_) {
    ++unreduced_passes_;
  }
  // Runs when this autograd pass has finished, on the thread that ran it.
  torch::autograd::Engine::get_default_engine().queue_callback([this] { end_pass(); });
}

void Reducer::end_pass() {
  std::lock_guard<std::mutex> lock(mutex_);
  pass_active_ = false;
  if (pass_reduces_ && iteration_active_) {
    if (options_.reduce_missing_gradients) {
      mark_remaining_ready_locked();
    }
    finalize_locked();
  }
}

void Reducer::begin_iteration_locked(std::int64_t local_samples) {
  if (iteration_active_) {
    DTRAIN_CHECK(next_bucket_ == 0,
                 fmt::format("rank {}: the previous iteration's reduction never finished (a "
                             "forward without backward after buckets were launched); every "
                             "training forward must be followed by backward",
                             group_->rank()));
    if (sample_count_work_) {
      sample_count_work_->wait();
    }
  }
  maybe_rebuild_buckets_locked();
  std::fill(ready_.begin(), ready_.end(), false);
  std::fill(marked_unused_.begin(), marked_unused_.end(), false);
  for (Bucket& bucket : buckets_) {
    bucket.pending = bucket.parameters.size();
    bucket.reduction.reset();
  }
  next_bucket_ = 0;
  scale_.reset();
  local_samples_ = local_samples;
  step_events_ = StepEvents{};
  step_events_.step = iterations_;
  sample_count_work_.reset();
  if (used_map_work_) {
    used_map_work_->wait();
    used_map_work_.reset();
  }
  if (options_.averaging == GradientAveraging::kSampleCount) {
    sample_count_ = at::full({1}, static_cast<double>(local_samples), at::kDouble);
    sample_count_work_ = group_->all_reduce(sample_count_);
  }
  iteration_active_ = true;
}

void Reducer::maybe_rebuild_buckets_locked() {
  if (!rebuild_pending_) {
    return;
  }
  const std::size_t count = parameters_.size();
  // This rank's ready order, completed with whatever never became ready;
  // rank 0's version wins so every rank builds the same buckets.
  std::vector<bool> seen(count, false);
  std::vector<std::int64_t> order;
  for (std::size_t p : ready_order_) {
    if (!seen[p]) {
      seen[p] = true;
      order.push_back(static_cast<std::int64_t>(p));
    }
  }
  for (std::size_t p : reverse_registration_order(count)) {
    if (!seen[p]) {
      order.push_back(static_cast<std::int64_t>(p));
    }
  }
  at::Tensor order_tensor = at::tensor(order, at::kLong);
  dist::issue_and_wait([&] { return group_->broadcast(order_tensor, {.root = 0}); });
  std::vector<std::size_t> agreed(count);
  std::vector<bool> present(count, false);
  const auto* values = order_tensor.data_ptr<std::int64_t>();
  for (std::size_t i = 0; i < count; ++i) {
    DTRAIN_CHECK(
        values[i] >= 0 && values[i] < static_cast<std::int64_t>(count) && !present[values[i]],
        "bucket rebuild: rank 0 sent an order that is not a permutation of the "
        "parameters (do all ranks wrap the same model?)");
    present[values[i]] = true;
    agreed[i] = static_cast<std::size_t>(values[i]);
  }
  build_buckets(agreed);
  rebuilt_ = true;
  rebuild_pending_ = false;
  ready_order_.clear();
  spdlog::debug("ddp: buckets rebuilt in gradient-ready order: {} buckets", buckets_.size());
}

void Reducer::mark_ready_locked(std::size_t param, bool has_gradient) {
  at::NoGradGuard no_grad;
  ready_[param] = true;
  if (!rebuilt_) {
    ready_order_.push_back(param);
  }
  const Slot slot = slots_[param];
  Bucket& bucket = buckets_[slot.bucket];
  at::Tensor& view = bucket.views[slot.index];
  at::Tensor& grad = parameters_[param].mutable_grad();
  if (has_gradient && grad.defined()) {
    if (!is_view_of(grad, view)) {
      view.copy_(grad);
      if (options_.gradient_as_bucket_view) {
        grad = view;
      }
    }
  } else {
    view.zero_();
  }
  if (--bucket.pending == 0) {
    launch_ready_buckets_locked();
  }
}

void Reducer::mark_remaining_ready_locked() {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!ready_[i]) {
      mark_ready_locked(i, /*has_gradient=*/true);  // .grad if defined, else zeros
    }
  }
}

double Reducer::bucket_scale_locked() {
  if (!scale_) {
    if (options_.averaging == GradientAveraging::kSampleCount) {
      sample_count_work_->wait();
      const double total = sample_count_.item<double>();
      DTRAIN_CHECK(total > 0, "sample-count averaging: no rank processed any sample this step");
      scale_ = static_cast<double>(local_samples_) / total;
    } else {
      scale_ = 1.0 / group_->size();
    }
  }
  return *scale_;
}

void Reducer::launch_ready_buckets_locked() {
  at::NoGradGuard no_grad;
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    Bucket& bucket = buckets_[next_bucket_];
    const double scale = bucket_scale_locked();
    if (scale != 1.0) {
      bucket.buffer.mul_(scale);
    }
    bucket.launch_time = Clock::now();
    if (group_->size() == 1) {
      // Alone, the local gradient is the sum: no communication, not even
      // the compression round trip.
      auto done = std::make_shared<dist::Work>("ddp bucket (world of 1)");
      done->finish();
      bucket.reduction = PendingReduction{std::move(done), nullptr};
    } else {
      bucket.reduction = hook_->start(*group_, bucket.buffer);
    }
    ++next_bucket_;
  }
}

void Reducer::finalize_locked() {
  at::NoGradGuard no_grad;
  step_events_.backward_end = Clock::now();
  if (next_bucket_ < buckets_.size()) {
    const std::string message = detail::missing_gradients_message(group_->rank(), names_, ready_);
    abandon_iteration_locked();
    throw Error(message);
  }
  std::vector<bool> used_somewhere(parameters_.size(), true);
  if (used_map_work_) {
    used_map_work_->wait();
    used_map_work_.reset();
    const auto* counts = used_map_.data_ptr<std::int32_t>();
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      used_somewhere[i] = counts[i] > 0;
    }
  }
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    bucket.reduction->work->wait();
    if (bucket.reduction->complete) {
      bucket.reduction->complete();
    }
    if (options_.record_timeline) {
      step_events_.buckets.push_back(BucketEvent{
          b, bucket.buffer.numel() * static_cast<std::int64_t>(bucket.buffer.element_size()),
          bucket.launch_time, bucket.reduction->work->finish_time().value_or(Clock::now())});
    }
    bucket.reduction.reset();
    for (std::size_t j = 0; j < bucket.parameters.size(); ++j) {
      if (!used_somewhere[bucket.parameters[j]]) {
        continue;
      }
      at::Tensor& grad = parameters_[bucket.parameters[j]].mutable_grad();
      const at::Tensor& view = bucket.views[j];
      if (options_.gradient_as_bucket_view) {
        if (!is_view_of(grad, view)) {
          grad = view;
        }
      } else if (grad.defined()) {
        grad.copy_(view);
      } else {
        grad = view.clone();
      }
    }
  }
  if (options_.record_timeline) {
    timeline_.add_step(std::move(step_events_));
  }
  step_events_ = StepEvents{};
  iteration_active_ = false;
  unreduced_passes_ = 0;
  ++iterations_;
  if (!rebuilt_) {
    rebuild_pending_ = true;
  }
}

void Reducer::abandon_iteration_locked() {
  // Launched reductions still touch the buffers: let them finish first.
  for (Bucket& bucket : buckets_) {
    if (bucket.reduction) {
      try {
        bucket.reduction->work->wait();
      } catch (const std::exception& e) {
        spdlog::warn("ddp: abandoned bucket reduction failed: {}", e.what());
      }
      bucket.reduction.reset();
    }
  }
  for (dist::WorkPtr* work : {&sample_count_work_, &used_map_work_}) {
    if (*work) {
      try {
        (*work)->wait();
      } catch (const std::exception&) {
        // The bucket reductions above already reported the failure.
      }
      work->reset();
    }
  }
  iteration_active_ = false;
  next_bucket_ = 0;
  if (!rebuilt_) {
    ready_order_.clear();
  }
}

}  // namespace dtrain::ddp
