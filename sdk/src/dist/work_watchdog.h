// A watchdog thread that finishes a backend's Works as its transport
// reports them done, and fails them when one fails or passes its deadline:
// how the NCCL group keeps its timeouts (Note [NCCL watchdog]). Nothing in
// it knows NCCL; the backend answers through WatchedWork and WatchdogHooks,
// so its logic runs, and is tested, on any machine.
//
// Note [NCCL watchdog]
// One thread per group polls every Work in flight (for NCCL, its end
// event), in issue order. A finished Work finishes. An error of the whole
// group (NCCL's asynchronous error), a Work that failed, or a Work past its
// deadline fails every Work in flight, so waiters raise instead of hanging,
// and then aborts the transport (ncclCommAbort, which unblocks the GPU
// kernels waiting on peers). In that order because ncclCommAbort can block
// until work queued ahead of the collective on its stream drains (seen on
// an H200: a collective behind a 10 s kernel held ncclCommAbort for
// seconds); the Works' tensors are released only after it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "dtrain/dist/work.h"
#include "transport.h"

namespace dtrain::dist::detail {

// A Work that a Watchdog finishes; its deadline is its timeout from now.
class WatchedWork : public Work {
 public:
  enum class Progress { kRunning, kDone, kFailed };

  explicit WatchedWork(OpContext ctx);

  // Its op, timeout and number among the group's collectives (0 for send
  // and recv), for Note [Which rank a timeout waited on].
  const OpContext& context() const { return ctx_; }
  bool past_deadline(std::chrono::steady_clock::time_point now) const { return now > deadline_; }

  // How far the transport got; on kFailed, `why` says what failed. Called
  // on the watchdog's thread only.
  virtual Progress poll(std::string& why) = 0;
  // Lets go of what the transport still used (tensors), once it is over.
  virtual void release() {}

 private:
  OpContext ctx_;
  std::chrono::steady_clock::time_point deadline_;
};

// What the backend does for its watchdog; called on the watchdog's thread.
class WatchdogHooks {
 public:
  virtual ~WatchdogHooks() = default;
  // Before the first poll (NCCL: make the communicator's device current).
  virtual void before_first_poll() {}
  // An error of the whole group, polled before the Works; nullopt if none.
  virtual std::optional<std::string> group_error() { return std::nullopt; }
  // What a timeout's failure adds: the ranks the collective waited on.
  virtual std::string diagnose(const OpContext& ctx) = 0;
  // Records `failure` as what broke the group, so that new operations fail
  // at once; true for the first failure, whose watchdog must abort().
  virtual bool mark_broken(const std::string& failure) = 0;
  // Ends whatever is still in flight on the transport; may block.
  virtual void abort() = 0;
};

class Watchdog {
 public:
  // `transport` names what abort() ends in messages ("NCCL communicator").
  Watchdog(WatchdogHooks& hooks, std::string transport, std::chrono::milliseconds poll_interval);
  ~Watchdog() { stop(); }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void start();
  void watch(std::shared_ptr<WatchedWork> work);
  // Returns once nothing is in flight (finished, failed or timed out) and
  // the thread ended. Idempotent.
  void stop();

 private:
  struct Failure {
    std::string message;
    const WatchedWork* culprit = nullptr;
    bool timed_out = false;
  };
  void loop();
  // One poll of every Work in flight; called and returns with the lock held.
  void poll(std::unique_lock<std::mutex>& lock);
  // Finds the first failure among `works` and collects the finished ones.
  Failure check(const std::list<std::shared_ptr<WatchedWork>>& works,
                std::vector<std::shared_ptr<WatchedWork>>& done);
  // Fails every Work in flight with `failure`, then aborts if `must_abort`.
  void fail_all(std::unique_lock<std::mutex>& lock, const Failure& failure, bool must_abort);

  WatchdogHooks& hooks_;
  std::string transport_;
  std::chrono::milliseconds poll_interval_;
  bool polled_ = false;  // the thread's own
  std::mutex mutex_;
  std::condition_variable cv_;
  std::list<std::shared_ptr<WatchedWork>> in_flight_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dtrain::dist::detail
