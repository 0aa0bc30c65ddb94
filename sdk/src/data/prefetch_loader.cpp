#include "dtrain/data/prefetch_loader.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <ATen/DeviceAccelerator.h>

#include "dtrain/util/errors.h"

namespace dtrain::data::detail {

struct PrefetchEngine::State {
  int64_t num_batches = 0;
  Make make;
  PrefetchOptions options;

  std::mutex mutex;
  std::condition_variable batch_made;  // the consumer waits on it
  std::condition_variable room;        // idle workers wait on it
  int64_t next_to_make = 0;
  int64_t next_to_return = 0;
  std::map<int64_t, std::any> made;  // made, not yet returned
  // The first batch whose make threw, and what it threw. Sticky: next()
  // rethrows it from then on.
  std::optional<int64_t> failed_batch;
  std::exception_ptr failure;
  bool stopping = false;
  std::vector<std::thread> workers;

  void record_failure(int64_t batch, std::exception_ptr error) {
    if (!failed_batch || batch < *failed_batch) {
      failed_batch = batch;
      failure = std::move(error);
    }
  }

  // May this worker start another batch, or must it wait (or stop)?
  bool worker_may_go_on() const {
    return stopping || failed_batch || next_to_make >= num_batches ||
           next_to_make < next_to_return + options.depth();
  }

  void work() {
    bool device_set = false;
    std::unique_lock lock(mutex);
    while (true) {
      room.wait(lock, [this] { return worker_may_go_on(); });
      if (stopping || failed_batch || next_to_make >= num_batches) {
        return;
      }
      const int64_t batch = next_to_make++;
      lock.unlock();
      std::any result;
      std::exception_ptr error;
      try {
        if (!device_set && options.device().is_cuda() && options.device().has_index()) {
          at::accelerator::setDeviceIndex(options.device().index());
        }
        device_set = true;
        result = make(batch);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error) {
        record_failure(batch, std::move(error));
      } else {
        made.emplace(batch, std::move(result));
      }
      batch_made.notify_all();
    }
  }
};

PrefetchEngine::PrefetchEngine(int64_t num_batches, Make make, const PrefetchOptions& options)
    : state_(std::make_unique<State>()) {
  DTRAIN_CHECK(num_batches >= 0, "PrefetchLoader: num_batches must not be negative, got ",
               num_batches);
  DTRAIN_CHECK(options.workers() >= 0, "PrefetchLoader: workers must not be negative, got ",
               options.workers());
  DTRAIN_CHECK(options.depth() >= 1, "PrefetchLoader: depth must be at least 1, got ",
               options.depth());
  DTRAIN_CHECK(make != nullptr, "PrefetchLoader: make is empty");
  state_->num_batches = num_batches;
  state_->make = std::move(make);
  state_->options = options;
  // More threads than batches, or than batches allowed ahead, would idle.
  const int64_t threads = std::min<int64_t>({options.workers(), options.depth(), num_batches});
  for (int64_t i = 0; i < threads; ++i) {
    state_->workers.emplace_back([state = state_.get()] { state->work(); });
  }
}

PrefetchEngine::~PrefetchEngine() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->room.notify_all();
  for (std::thread& worker : state_->workers) {
    worker.join();
  }
}

int64_t PrefetchEngine::size() const {
  return state_->num_batches;
}

std::optional<std::any> PrefetchEngine::next() {
  State& s = *state_;
  std::unique_lock lock(s.mutex);
  const int64_t batch = s.next_to_return;
  if (s.failed_batch == batch) {
    std::rethrow_exception(s.failure);
  }
  if (batch >= s.num_batches) {
    return std::nullopt;
  }
  if (s.workers.empty()) {
    lock.unlock();
    std::any result;
    try {
      result = s.make(batch);
    } catch (...) {
      lock.lock();
      s.record_failure(batch, std::current_exception());
      throw;
    }
    lock.lock();
    ++s.next_to_return;
    return result;
  }
  s.batch_made.wait(lock, [&] { return s.made.contains(batch) || s.failed_batch == batch; });
  const auto found = s.made.find(batch);
  if (found == s.made.end()) {
    std::rethrow_exception(s.failure);
  }
  std::any result = std::move(found->second);
  s.made.erase(found);
  ++s.next_to_return;
  lock.unlock();
  s.room.notify_all();
  return result;
}

}  // namespace dtrain::data::detail
