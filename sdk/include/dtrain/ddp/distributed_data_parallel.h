// DistributedDataParallel for LibTorch modules: wrap a module holder, call
// it as you would call the module, and backward all-reduces the gradients
// in buckets that overlap the rest of backward.
//
//   dtrain::dist::init_process_group();
//   dtrain::models::ToyCnn model(...);
//   dtrain::ddp::DistributedDataParallel ddp(model, {.bucket_cap_mb = 25});
//   torch::optim::SGD optimizer(ddp->parameters(), 0.01);
//   for (...) {
//     optimizer.zero_grad();
//     auto loss = F::cross_entropy(ddp(images), labels);   // model's own forward
//     loss.backward();                                     // gradients averaged here
//     optimizer.step();
//   }
//
// Gradient accumulation: { auto guard = ddp.no_sync(); ddp(x) ... backward(); }
// keeps gradients local; the next synchronized backward reduces the sum.
// Uneven data: ddp.join([&] { for (batch : my_batches) ... });
// Every rank must construct the wrapper, and run each training forward and
// backward, in the same order (they are collectives).
#pragma once

#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include "dtrain/ddp/ddp_engine.h"
#include "dtrain/ddp/options.h"
#include "dtrain/ddp/reducer.h"
#include "dtrain/dist/init.h"

namespace dtrain::ddp {

namespace detail {

// The batch size of a forward: dim 0 of its first tensor argument.
inline std::optional<std::int64_t> leading_batch_size() {
  return std::nullopt;
}
template <typename First, typename... Rest>
std::optional<std::int64_t> leading_batch_size(const First& first, const Rest&... rest) {
  if constexpr (std::is_convertible_v<const First&, const at::Tensor&>) {
    const at::Tensor& tensor = first;
    if (tensor.defined() && tensor.dim() > 0) {
      return tensor.size(0);
    }
  }
  return leading_batch_size(rest...);
}

template <typename T>
struct is_std_vector : std::false_type {};
template <typename T, typename A>
struct is_std_vector<std::vector<T, A>> : std::true_type {};
template <typename T>
struct is_std_optional : std::false_type {};
template <typename T>
struct is_std_optional<std::optional<T>> : std::true_type {};

// Appends the tensors in `item`: a tensor, or any nesting of vectors,
// optionals, tuples and pairs of them. Other types hold none.
template <typename T>
void collect_tensors(const T& item, std::vector<at::Tensor>& tensors) {
  if constexpr (std::is_convertible_v<const T&, const at::Tensor&>) {
    tensors.push_back(item);
  } else if constexpr (is_std_vector<T>::value) {
    for (const auto& element : item) {
      collect_tensors(element, tensors);
    }
  } else if constexpr (is_std_optional<T>::value) {
    if (item) {
      collect_tensors(*item, tensors);
    }
  } else if constexpr (requires { std::tuple_size<T>::value; }) {
    std::apply([&](const auto&... elements) { (collect_tensors(elements, tensors), ...); }, item);
  }
}

// The tensors of a forward's output, where the unused-parameter search
// starts: every tensor in it, however nested (a parameter whose only path
// to the loss misses them is taken for unused; Reducer says so, naming
// it, when its gradient comes after all).
template <typename Output>
std::vector<at::Tensor> output_tensors(const Output& output) {
  std::vector<at::Tensor> tensors;
  collect_tensors(output, tensors);
  return tensors;
}

template <typename Holder>
std::shared_ptr<torch::nn::Module> module_pointer(const Holder& holder) {
  if constexpr (requires { holder.ptr(); }) {
    return holder.ptr();
  } else {
    return holder;
  }
}

}  // namespace detail

// Restores the wrapper's previous synchronization state when it goes out of scope.
class NoSyncGuard {
 public:
  explicit NoSyncGuard(Reducer& reducer) : reducer_(&reducer), previous_(reducer.sync_enabled()) {
    reducer_->set_sync_enabled(false);
  }
  ~NoSyncGuard() {
    if (reducer_ != nullptr) {
      reducer_->set_sync_enabled(previous_);
    }
  }
  NoSyncGuard(NoSyncGuard&& other) noexcept
      : reducer_(std::exchange(other.reducer_, nullptr)), previous_(other.previous_) {}
  NoSyncGuard(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(NoSyncGuard&&) = delete;

 private:
  Reducer* reducer_;
  bool previous_;
};

// ModuleHolder: a TORCH_MODULE holder (ToyCnn) or a std::shared_ptr to a module.
template <typename ModuleHolder>
class DistributedDataParallel {
 public:
  // `group` nullptr: the default group (init_process_group first).
  explicit DistributedDataParallel(ModuleHolder module, DdpOptions options = {},
                                   dist::ProcessGroupPtr group = nullptr)
      : module_(std::move(module)),
        engine_(std::make_unique<DdpEngine>(detail::module_pointer(module_), std::move(options),
                                            group ? std::move(group) : dist::default_group())) {}

  // The module's own forward, between DDP's pre- and post-forward steps.
  template <typename... Args>
  auto forward(Args&&... args) {
    engine_->pre_forward(detail::leading_batch_size(args...));
    auto output = module_->forward(std::forward<Args>(args)...);
    engine_->post_forward(detail::output_tensors(output));
    return output;
  }
  template <typename... Args>
  auto operator()(Args&&... args) {
    return forward(std::forward<Args>(args)...);
  }

  ModuleHolder& module() { return module_; }
  const ModuleHolder& module() const { return module_; }
  auto operator->() { return module_.operator->(); }
  auto operator->() const { return module_.operator->(); }

  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(engine_->reducer()); }
  void join(const std::function<void()>& train_loop) { engine_->join(train_loop); }
  // The batch size of the next forward, when its first argument is not the batch.
  void set_next_samples(std::int64_t samples) { engine_->set_next_samples(samples); }

  Reducer& reducer() { return engine_->reducer(); }
  Timeline& timeline() { return engine_->reducer().timeline(); }
  const DdpOptions& options() const { return engine_->options(); }

 private:
  ModuleHolder module_;
  std::unique_ptr<DdpEngine> engine_;
};

}  // namespace dtrain::ddp
