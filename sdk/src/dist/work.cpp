#include "dtrain/dist/work.h"

#include "dtrain/dist/types.h"
#include "work_queue.h"

namespace dtrain::dist {

void Work::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout.count() > 0) {
    if (!done_cv_.wait_for(lock, timeout, [this] { return done_; })) {
      throw CollectiveTimeoutError(description_ + ": not finished after " +
                                   std::to_string(timeout.count()) + " ms");
    }
  } else {
    // The backend enforces the operation's own timeout and finishes the work.
    done_cv_.wait(lock, [this] { return done_; });
  }
  if (error_) {
    std::rethrow_exception(error_);
  }
}

bool Work::is_completed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

std::exception_ptr Work::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

std::optional<std::chrono::steady_clock::time_point> Work::finish_time() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!done_) {
    return std::nullopt;
  }
  return finish_time_;
}

void Work::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    error_ = error;
    finish_time_ = std::chrono::steady_clock::now();
  }
  done_cv_.notify_all();
}

DeferredWork::DeferredWork(std::string description,
                           std::function<void(std::chrono::milliseconds)> wait_fn,
                           std::chrono::milliseconds default_timeout)
    : Work(std::move(description)),
      wait_fn_(std::move(wait_fn)),
      default_timeout_(default_timeout) {}

void DeferredWork::wait(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> waiting(wait_mutex_);
  if (!is_completed()) {
    try {
      wait_fn_(timeout.count() > 0 ? timeout : default_timeout_);
      finish();
    } catch (const std::exception& e) {
      const std::string message = description_ + ": " + e.what();
      const bool timed_out = message.find("did not complete") != std::string::npos ||
                             message.find("imed out") != std::string::npos;
      finish(timed_out ? std::make_exception_ptr(CollectiveTimeoutError(message))
                       : std::make_exception_ptr(CollectiveError(message)));
    }
  }
  Work::wait();
}

WorkPtr issue_and_wait(c10::function_ref<WorkPtr()> issue) {
  const detail::WaitsAtOnce waits;
  WorkPtr work = issue();
  work->wait();
  return work;
}

}  // namespace dtrain::dist
