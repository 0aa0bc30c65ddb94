// PrefetchLoader: batches made on worker threads while the caller trains on
// earlier ones, handed out in order -- what torch.utils.data.DataLoader's
// num_workers and prefetch_factor give, with threads instead of processes.
//
//   auto make = [&](int64_t b) { return select_and_augment(b); };   // any copyable type
//   PrefetchLoader<Batch> loader(num_batches, make, PrefetchOptions().workers(2));
//   while (std::optional<Batch> batch = loader.next()) { train_step(*batch); }
//
// Contract:
//  - next() returns make(0), make(1), ..., make(num_batches - 1), in that
//    order, then std::nullopt, whatever the number of workers.
//  - With workers() = 0, next() calls make on the caller's thread (no
//    threads at all, as num_workers=0). Otherwise make runs on the workers,
//    each call on one worker, and up to min(workers, depth) calls at once
//    (more threads than batches allowed ahead would idle): make must
//    be safe to call concurrently, and its result must depend only on the
//    batch number (derive random draws from it, e.g. a generator seeded by
//    it) if batches are to be the same for any worker count.
//  - At most depth() batches beyond the last one next() returned are made
//    or being made at any time, so memory stays bounded.
//  - An exception thrown by make(b) is rethrown, unchanged, by the next()
//    that would have returned batch b; the batches before b are returned
//    first, and no batch after b is started once it has thrown.
//  - The destructor stops the workers after the calls they are in and
//    joins them; unreturned batches are dropped. A make that never returns
//    holds it up: nothing can stop a thread from outside.
//  - Workers run with LibTorch's per-thread defaults (no autocast, grad mode
//    on); they use the intra-op thread count set by at::set_num_threads. On
//    a CUDA device(), each worker makes it current first, so memory they
//    pin (Tensor::pin_memory, for non-blocking copies) belongs to it rather
//    than to GPU 0.
//
// Construction throws dtrain::Error for a negative batch count or worker
// count, or a depth below 1. One consumer thread calls next().
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include <c10/core/Device.h>
#include <torch/arg.h>

namespace dtrain::data {

struct PrefetchOptions {
  // Threads making batches; 0 makes each batch in next().
  TORCH_ARG(int, workers) = 1;
  // Batches made or being made ahead of the last one returned, at most.
  TORCH_ARG(int, depth) = 2;
  // The device the batches are for: a CUDA device is made current on
  // every worker.
  TORCH_ARG(c10::Device, device) = c10::Device(c10::kCPU);
};

namespace detail {

// The type-free machinery behind PrefetchLoader: threads, ordering, bounds
// and errors, over batches held as std::any.
class PrefetchEngine {
 public:
  using Make = std::function<std::any(int64_t batch)>;
  PrefetchEngine(int64_t num_batches, Make make, const PrefetchOptions& options);
  ~PrefetchEngine();
  PrefetchEngine(const PrefetchEngine&) = delete;
  PrefetchEngine& operator=(const PrefetchEngine&) = delete;

  std::optional<std::any> next();
  int64_t size() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace detail

template <typename Batch>
class PrefetchLoader {
 public:
  using Make = std::function<Batch(int64_t batch)>;

  PrefetchLoader(int64_t num_batches, Make make, const PrefetchOptions& options = {})
      : engine_(num_batches, erase_type(std::move(make)), options) {}

  // The next batch in order, or std::nullopt after the last one.
  std::optional<Batch> next() {
    std::optional<std::any> batch = engine_.next();
    if (!batch) {
      return std::nullopt;
    }
    return std::any_cast<Batch>(std::move(*batch));
  }

  // The number of batches, as given.
  int64_t size() const { return engine_.size(); }

 private:
  // An empty `make` stays empty, for the engine's check to name.
  static detail::PrefetchEngine::Make erase_type(Make make) {
    if (!make) {
      return nullptr;
    }
    return [make = std::move(make)](int64_t batch) { return std::any(make(batch)); };
  }

  detail::PrefetchEngine engine_;
};

}  // namespace dtrain::data
