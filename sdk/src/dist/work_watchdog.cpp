// Note [NCCL watchdog] (work_watchdog.h).
#include "work_watchdog.h"

#include <vector>

#include <spdlog/spdlog.h>

namespace dtrain::dist::detail {

using Clock = std::chrono::steady_clock;

WatchedWork::WatchedWork(OpContext ctx)
    : Work(ctx.what), ctx_(std::move(ctx)), deadline_(Clock::now() + ctx_.timeout) {}

Watchdog::Watchdog(WatchdogHooks& hooks, std::string transport,
                   std::chrono::milliseconds poll_interval)
    : hooks_(hooks), transport_(std::move(transport)), poll_interval_(poll_interval) {}

void Watchdog::start() {
  thread_ = std::thread([this] { loop(); });
}

void Watchdog::watch(std::shared_ptr<WatchedWork> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_.push_back(std::move(work));
  }
  cv_.notify_one();
}

void Watchdog::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();  // returns when nothing is in flight (done, failed or timed out)
  }
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (in_flight_.empty()) {
      if (stopping_) {
        return;
      }
      cv_.wait(lock, [this] { return stopping_ || !in_flight_.empty(); });
      continue;
    }
    poll(lock);
  }
}

Watchdog::Failure Watchdog::check(const std::list<std::shared_ptr<WatchedWork>>& works,
                                  std::vector<std::shared_ptr<WatchedWork>>& done) {
  if (auto error = hooks_.group_error()) {
    return {works.front()->description() + ": " + *error, works.front().get(), false};
  }
  const auto now = Clock::now();
  for (const auto& work : works) {
    std::string why;
    const auto progress = work->poll(why);
    if (progress == WatchedWork::Progress::kDone) {
      done.push_back(work);
    } else if (progress == WatchedWork::Progress::kFailed) {
      return {work->description() + ": " + why, work.get(), false};
    } else if (work->past_deadline(now)) {
      return {work->description() + ": not finished after " +
                  std::to_string(work->context().timeout.count()) +
                  " ms (a peer may be missing, or stuck before this collective)",
              work.get(), true};
    }
  }
  return {};
}

void Watchdog::poll(std::unique_lock<std::mutex>& lock) {
  auto works = in_flight_;  // poll without holding the lock
  lock.unlock();
  if (!polled_) {
    hooks_.before_first_poll();
    polled_ = true;
  }
  std::vector<std::shared_ptr<WatchedWork>> done;
  Failure failure = check(works, done);
  if (failure.timed_out) {
    // Before the abort: the peers still in this collective report theirs.
    failure.message += hooks_.diagnose(failure.culprit->context());
  }
  for (const auto& work : done) {
    work->release();
    work->finish();
  }
  const bool must_abort = failure.culprit != nullptr && hooks_.mark_broken(failure.message);
  if (must_abort) {
    spdlog::error("{}; aborting the {}", failure.message, transport_);
  }
  lock.lock();
  for (const auto& work : done) {
    in_flight_.remove(work);
  }
  if (failure.culprit == nullptr) {
    cv_.wait_for(lock, poll_interval_);
    return;
  }
  fail_all(lock, failure, must_abort);
}

void Watchdog::fail_all(std::unique_lock<std::mutex>& lock, const Failure& failure,
                        bool must_abort) {
  const std::string reason = failure.message + "; the group's " + transport_ + " was aborted";
  for (const auto& work : in_flight_) {
    const std::string message = work.get() == failure.culprit
                                    ? reason
                                    : work->description() + ": aborted because " + reason;
    work->finish(failure.timed_out ? std::make_exception_ptr(CollectiveTimeoutError(message))
                                   : std::make_exception_ptr(CollectiveError(message)));
  }
  auto failed = std::move(in_flight_);
  in_flight_.clear();
  lock.unlock();
  if (must_abort) {
    hooks_.abort();
  }
  for (const auto& work : failed) {
    work->release();
  }
  lock.lock();
}

}  // namespace dtrain::dist::detail
