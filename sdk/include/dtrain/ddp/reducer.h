// Reducer: the gradient all-reduce engine under DistributedDataParallel and
// DistributedOptimizer.
//
// Parameters are grouped into buckets (bucket_assignment.h), first in
// reverse registration order -- roughly the order backward produces their
// gradients -- and once more after the first iteration in the order the
// gradients really became ready (rank 0's order, so every rank agrees). A
// post-accumulation hook on each parameter's AccumulateGrad node copies the
// fresh gradient into its bucket's flat buffer; when a bucket's last
// gradient arrives, the bucket is all-reduced asynchronously (buckets are
// launched in index order, so every rank issues the same collectives in the
// same order) while backward goes on. At the end of the autograd pass a
// callback waits for every bucket and leaves the averaged gradients in
// .grad (as views into the buffers with gradient_as_bucket_view).
//
// Iteration protocol (what DistributedDataParallel drives):
//   prepare_for_forward(samples)   before a training forward
//   prepare_for_backward(outputs)  after it (finds unused parameters)
//   loss.backward()                hooks reduce; the end-of-pass callback finalizes
// A backward with no prepare_for_forward (DistributedOptimizer) starts an
// iteration at its first hook, averaging over the world.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <ATen/core/Tensor.h>

#include "dtrain/ddp/comm_hook.h"
#include "dtrain/ddp/options.h"
#include "dtrain/ddp/timeline.h"
#include "dtrain/dist/process_group.h"

namespace torch::autograd {
struct Node;
}

namespace dtrain::ddp {

struct ReducerOptions {
  std::size_t first_bucket_bytes = 1 << 20;
  std::size_t bucket_bytes = 25 << 20;
  bool gradient_as_bucket_view = false;
  // Reduce only on every k-th backward pass; gradients accumulate locally in
  // between (Horovod's backward_passes_per_step; DDP's no_sync uses
  // set_sync_enabled instead).
  int backward_passes_per_step = 1;
  GradientAveraging averaging = GradientAveraging::kWorld;
  std::shared_ptr<CommHook> comm_hook;  // nullptr = allreduce_hook()
  bool record_timeline = false;
  // Reduce only the backward of a forward that announced itself
  // (prepare_for_forward), as DistributedDataParallel's training forwards
  // do; a backward without one (of a forward through the wrapped module's
  // own forward or under no_sync, or a second backward of one forward)
  // keeps its gradients
  // local, as PyTorch's DDP does. Off for DistributedOptimizer, which has
  // no forward and reduces every backward.
  bool reduce_only_after_forward = false;
  // A parameter that got no gradient in a reducing pass takes part with
  // what its .grad holds (accumulated by earlier passes) or zeros, as
  // Horovod's synchronize() does (DistributedOptimizer). Off, such a pass
  // raises naming the parameters (DistributedDataParallel without
  // find_unused_parameters, as in PyTorch).
  bool reduce_missing_gradients = false;
};

// The layout of one bucket, for tests and logs.
struct BucketInfo {
  std::vector<std::size_t> parameters;  // indices into the reducer's parameters
  std::int64_t bytes = 0;
};

class Reducer {
 public:
  // `names[i]` names parameters[i] in errors. Every parameter must require
  // grad; every rank must pass the same parameters in the same order.
  Reducer(std::vector<at::Tensor> parameters, std::vector<std::string> names,
          dist::ProcessGroupPtr group, ReducerOptions options);
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Starts an iteration that will reduce: rebuilds buckets once after the
  // first iteration and, for sample-count averaging, starts the all-reduce
  // of the global sample count. Every rank must call it.
  void prepare_for_forward(std::int64_t local_samples);
  // With find_unused (or the static-graph set recorded once): marks the
  // parameters unreachable from `outputs` as ready with a zero gradient.
  void prepare_for_backward(const std::vector<at::Tensor>& outputs);
  // Joined ranks (DistributedDataParallel::join) mirror one iteration of the
  // others: the same collectives, contributing zero gradients and samples.
  void run_shadow_iteration();
  // DistributedOptimizer's step: reduces the gradients of backward passes
  // that accumulated locally since the last reduction (fewer than
  // backward_passes_per_step, or some after the last reducing pass), then
  // starts counting passes afresh. Does nothing when none are pending, so
  // a second call is harmless. Every rank must call it; not inside backward.
  void synchronize();

  // false: backward passes accumulate locally (no_sync).
  void set_sync_enabled(bool enabled);
  bool sync_enabled() const;
  // Find unused parameters on every forward, or once (static graph).
  void set_unused_parameter_search(bool enabled, bool static_graph);

  std::vector<BucketInfo> buckets() const;
  bool buckets_rebuilt() const;
  // Iterations that reduced (and finished).
  std::int64_t iterations() const;
  // Backward passes that reached this reducer, ever.
  std::int64_t backward_passes() const;
  Timeline& timeline() { return timeline_; }
  const std::vector<at::Tensor>& parameters() const { return parameters_; }

 private:
  struct Bucket {
    std::vector<std::size_t> parameters;
    at::Tensor buffer;              // flat, one dtype
    std::vector<at::Tensor> views;  // views[j]: parameters[j]'s slice, shaped like it
    std::size_t pending = 0;        // gradients still missing this iteration
    std::optional<PendingReduction> reduction;
    TimePoint launch_time;
  };
  struct Slot {  // where parameter i lives
    std::size_t bucket = 0;
    std::size_t index = 0;
  };

  void build_buckets(const std::vector<std::size_t>& order);
  void register_hooks();
  void on_gradient_ready(std::size_t param);
  void begin_pass_locked();
  void end_pass();
  void begin_iteration_locked(std::int64_t local_samples);
  void maybe_rebuild_buckets_locked();
  void mark_ready_locked(std::size_t param, bool has_gradient);
  void mark_remaining_ready_locked();
  void launch_ready_buckets_locked();
  void finalize_locked();
  void abandon_iteration_locked();
  double bucket_scale_locked();

  std::vector<at::Tensor> parameters_;
  std::vector<std::string> names_;
  dist::ProcessGroupPtr group_;
  ReducerOptions options_;
  std::shared_ptr<CommHook> hook_;
  // Kept alive here: a tensor holds its AccumulateGrad node only weakly.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<std::uintptr_t> hook_keys_;

  mutable std::mutex mutex_;
  std::vector<Bucket> buckets_;
  std::vector<Slot> slots_;
  bool rebuilt_ = false;
  bool rebuild_pending_ = false;
  std::vector<std::size_t> ready_order_;  // this iteration, for the rebuild

  // Per-iteration state.
  bool sync_enabled_ = true;
  bool iteration_active_ = false;
  bool pass_active_ = false;
  bool pass_reduces_ = false;
  std::int64_t passes_ = 0;            // since the last synchronize(), for the k-th pass
  std::int64_t unreduced_passes_ = 0;  // passes whose gradients stayed local since a reduction
  std::int64_t total_passes_ = 0;
  std::vector<bool> ready_;
  std::vector<bool> marked_unused_;  // ready_ because the unused search said so
  std::size_t next_bucket_ = 0;
  std::int64_t local_samples_ = 0;
  dist::WorkPtr sample_count_work_;
  at::Tensor sample_count_;
  std::optional<double> scale_;
  at::Tensor used_map_;  // per parameter: how many ranks used it this iteration
  dist::WorkPtr used_map_work_;
  std::int64_t iterations_ = 0;

  bool search_unused_ = false;
  bool static_graph_ = false;
  std::optional<std::vector<std::size_t>> static_unused_;

  Timeline timeline_;
  StepEvents step_events_;
};

}  // namespace dtrain::ddp
