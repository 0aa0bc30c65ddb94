// Note [NCCL watchdog] (sdk/src/dist/work_watchdog.h) without a GPU: Works
// whose transport a test controls finish when it says they are done, and
// one that fails or passes its deadline fails every Work in flight before
// the transport is aborted, once, and before the Works let go of their
// tensors.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dist/work_watchdog.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
using dist::detail::OpContext;
using dist::detail::WatchedWork;
using Progress = WatchedWork::Progress;

// The order in which the watchdog called the hooks and released the Works.
struct WatchdogEvents {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::string> seen;
  void add(const std::string& event) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      seen.push_back(event);
    }
    cv.notify_all();
  }
  std::vector<std::string> get() {
    std::lock_guard<std::mutex> lock(mutex);
    return seen;
  }
  void wait_for(std::size_t count) {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait_for(lock, 5s, [&] { return seen.size() >= count; });
  }
};

class FakeWatchedWork : public WatchedWork {
 public:
  FakeWatchedWork(const std::string& op, std::chrono::milliseconds timeout, std::int64_t seq,
                  WatchdogEvents& events)
      : WatchedWork(OpContext{op, op + " on group 'g'", timeout, seq}), events_(events) {}

  Progress poll(std::string& why) override {
    if (failure_.empty()) {
      return done_.load() ? Progress::kDone : Progress::kRunning;
    }
    why = failure_;
    return Progress::kFailed;
  }
  void release() override {
    events_.add("release " + context().op + (is_completed() ? " (finished)" : " (running)"));
  }

  std::atomic<bool> done_{false};
  std::string failure_;  // set before the work is watched

 private:
  WatchdogEvents& events_;
};

class FakeWatchdogHooks : public dist::detail::WatchdogHooks {
 public:
  explicit FakeWatchdogHooks(WatchdogEvents& events) : events_(events) {}

  std::optional<std::string> group_error() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return group_error_;
  }
  std::string diagnose(const OpContext& ctx) override {
    return "; rank(s) 1 did not reach #" + std::to_string(ctx.seq);
  }
  bool mark_broken(const std::string& failure) override {
    events_.add("broken: " + failure);
    return !std::exchange(broken_, true);
  }
  void abort() override {
    for (const auto& work : watched_) {
      events_.add(std::string("abort sees ") + (work->is_completed() ? "finished" : "running"));
    }
  }
  void set_group_error(std::string error) {
    std::lock_guard<std::mutex> lock(mutex_);
    group_error_ = std::move(error);
  }

  std::vector<std::shared_ptr<FakeWatchedWork>> watched_;

 private:
  WatchdogEvents& events_;
  std::mutex mutex_;
  std::optional<std::string> group_error_;
  bool broken_ = false;
};

std::string failure_of(const dist::Work& work) {
  try {
    std::rethrow_exception(work.exception());
  } catch (const dist::CollectiveTimeoutError& e) {
    return std::string("timeout: ") + e.what();
  } catch (const dist::CollectiveError& e) {
    return std::string("error: ") + e.what();
  }
}

class WorkWatchdog : public ::testing::Test {
 protected:
  std::shared_ptr<FakeWatchedWork> watched(const std::string& op,
                                           std::chrono::milliseconds timeout = 10s,
                                           const std::string& failure = "") {
    auto work = std::make_shared<FakeWatchedWork>(op, timeout, ++seq_, events_);
    work->failure_ = failure;
    hooks_.watched_.push_back(work);
    watchdog_.watch(work);
    return work;
  }

  WatchdogEvents events_;
  FakeWatchdogHooks hooks_{events_};
  dist::detail::Watchdog watchdog_{hooks_, "fake transport", 1ms};
  std::int64_t seq_ = 0;
};

TEST_F(WorkWatchdog, FinishesWorksTheTransportReportsDone) {
  watchdog_.start();
  auto first = watched("all_reduce(SUM)");
  auto second = watched("barrier");
  second->done_ = true;
  second->wait(5s);
  EXPECT_FALSE(first->is_completed());
  first->done_ = true;
  first->wait(5s);
  EXPECT_EQ(first->exception(), nullptr);
  watchdog_.stop();
  EXPECT_EQ(events_.get(), (std::vector<std::string>{"release barrier (running)",
                                                     "release all_reduce(SUM) (running)"}));
}

TEST_F(WorkWatchdog, ADeadlineFailsEveryWorkThenAbortsOnceThenReleases) {
  auto late = watched("all_reduce(SUM)", 30ms);
  auto behind = watched("broadcast from rank 0");
  watchdog_.start();
  EXPECT_THROW(behind->wait(5s), dist::CollectiveTimeoutError);
  const std::string failure =
      "all_reduce(SUM) on group 'g': not finished after 30 ms (a peer may be missing, or stuck "
      "before this collective); rank(s) 1 did not reach #1";
  EXPECT_EQ(failure_of(*late), "timeout: " + failure + "; the group's fake transport was aborted");
  EXPECT_EQ(failure_of(*behind), "timeout: broadcast from rank 0 on group 'g': aborted because " +
                                     failure + "; the group's fake transport was aborted");
  watchdog_.stop();
  EXPECT_EQ(events_.get(),
            (std::vector<std::string>{"broken: " + failure, "abort sees finished",
                                      "abort sees finished", "release all_reduce(SUM) (finished)",
                                      "release broadcast from rank 0 (finished)"}));
}

TEST_F(WorkWatchdog, AFailedWorkOrAGroupErrorFailsEveryWorkWithoutATimeout) {
  watchdog_.start();
  auto failed = watched("send to rank 1", 10s, "the CUDA stream failed: oops");
  EXPECT_THROW(failed->wait(5s), dist::CollectiveError);
  EXPECT_EQ(failure_of(*failed),
            "error: send to rank 1 on group 'g': the CUDA stream failed: oops; the group's fake "
            "transport was aborted");
  events_.wait_for(3);  // broken, aborted and released: the watchdog is done with it
  // The group is broken already: this failure aborts nothing.
  hooks_.set_group_error("the transport reported an asynchronous error");
  auto next = watched("barrier");
  EXPECT_THROW(next->wait(5s), dist::CollectiveError);
  EXPECT_EQ(failure_of(*next),
            "error: barrier on group 'g': the transport reported an asynchronous error; the "
            "group's fake transport was aborted");
  watchdog_.stop();
  EXPECT_EQ(events_.get(),
            (std::vector<std::string>{
                "broken: send to rank 1 on group 'g': the CUDA stream failed: oops",
                "abort sees finished", "release send to rank 1 (finished)",
                "broken: barrier on group 'g': the transport reported an asynchronous error",
                "release barrier (finished)"}));
}

}  // namespace
