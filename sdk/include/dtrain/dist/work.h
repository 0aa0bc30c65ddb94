// Work: the handle of a communication in flight (c10d's Work).
//
//   auto work = group->all_reduce(tensor);   // returns at once
//   ...                                      // overlap other work
//   work->wait();                            // rethrows if it failed
//
// wait() blocks until the operation finished or the timeout passed; on
// failure (a peer died, a timeout) it rethrows the operation's exception,
// which names the op, the group and the rank. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <c10/util/FunctionRef.h>

namespace dtrain::dist {

class Work {
 public:
  explicit Work(std::string description) : description_(std::move(description)) {}
  virtual ~Work() = default;

  // Waits for completion. A zero timeout means "the operation's own timeout".
  // Throws the operation's exception, or dtrain::dist::CollectiveTimeoutError
  // when `timeout` passes first.
  virtual void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::zero());
  // True once the operation finished (or failed: see exception()); never
  // waits, so it may be polled. Virtual, as torch's isCompleted, for work
  // that progresses only when asked: MPI's send and recv test their request
  // here.
  virtual bool is_completed();
  // The failure, or nullptr while running or after success.
  std::exception_ptr exception() const;
  const std::string& description() const { return description_; }
  // When the operation finished (for timelines); nullopt while it runs.
  std::optional<std::chrono::steady_clock::time_point> finish_time() const;

  // For backends: records the outcome and wakes waiters. Call once.
  void finish(std::exception_ptr error = nullptr);

 protected:
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::chrono::steady_clock::time_point finish_time_{};
  std::exception_ptr error_;
  std::string description_;
};

using WorkPtr = std::shared_ptr<Work>;

// Issues the operation `issue` returns and waits on it before returning its
// Work: for a caller that needs the result at once, which then costs no
// wake-up of the group's worker (Note [A caller that waits at once]).
//   dist::issue_and_wait([&] { return group->all_reduce(t); });
WorkPtr issue_and_wait(c10::function_ref<WorkPtr()> issue);

// A Work that runs `wait_fn` on the waiting thread (for transfers whose
// transport waits itself, like Gloo's point-to-point buffers).
class DeferredWork : public Work {
 public:
  DeferredWork(std::string description, std::function<void(std::chrono::milliseconds)> wait_fn,
               std::chrono::milliseconds default_timeout);
  void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::zero()) override;

 private:
  std::function<void(std::chrono::milliseconds)> wait_fn_;
  std::chrono::milliseconds default_timeout_;
  std::mutex wait_mutex_;
};

}  // namespace dtrain::dist
