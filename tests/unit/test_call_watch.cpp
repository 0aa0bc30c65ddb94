// CallWatch (sdk/src/dist/call_watch.h), the MPI transport's watch on a
// blocking all-reduce, without MPI: a call past its timeout is diagnosed
// and handed over once; a call that ends in time, or ends while its peers
// are asked, is not handed over.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/call_watch.h"

namespace {

using namespace std::chrono_literals;
using dtrain::dist::detail::CallWatch;
using dtrain::dist::detail::OpContext;

OpContext call(std::chrono::milliseconds timeout) {
  return {.op = "all_reduce(SUM)",
          .what = "all_reduce(SUM) on group 'default' (mpi), rank 0 of 2",
          .timeout = timeout,
          .seq = 7};
}

// What the watch handed over, and when each hook ran.
struct Handed {
  std::mutex mutex;
  std::vector<std::string> diagnosed;  // ops, as the diagnosis saw them
  std::vector<std::string> messages;   // what `overdue` got
  std::promise<void> first_overdue;
};

CallWatch::Diagnose diagnose_into(Handed& handed) {
  return [&handed](const OpContext& ctx) {
    std::lock_guard<std::mutex> lock(handed.mutex);
    handed.diagnosed.push_back(ctx.op + " #" + std::to_string(ctx.seq));
    return ctx.what + ": not finished after " + std::to_string(ctx.timeout.count()) +
           " ms; rank(s) 1 did not reach it";
  };
}

CallWatch::Overdue overdue_into(Handed& handed) {
  return [&handed](const std::string& message) {
    std::lock_guard<std::mutex> lock(handed.mutex);
    handed.messages.push_back(message);
    if (handed.messages.size() == 1) {
      handed.first_overdue.set_value();
    }
  };
}

TEST(CallWatch, ACallPastItsTimeoutIsDiagnosedAndHandedOverOnce) {
  Handed handed;
  std::future<void> overdue = handed.first_overdue.get_future();
  {
    CallWatch watch(5ms, diagnose_into(handed), overdue_into(handed));
    const OpContext ctx = call(30ms);
    const CallWatch::Watched watched(watch, ctx);
    ASSERT_EQ(overdue.wait_for(60s), std::future_status::ready) << "the overdue call was not seen";
    // Many looks later, the same call is still running: no second report.
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(handed.messages.size(), 1u);
  EXPECT_EQ(handed.diagnosed, std::vector<std::string>{"all_reduce(SUM) #7"});
  EXPECT_NE(handed.messages[0].find("all_reduce(SUM) on group 'default' (mpi), rank 0 of 2: "
                                    "not finished after 30 ms; rank(s) 1 did not reach it"),
            std::string::npos)
      << handed.messages[0];
}

TEST(CallWatch, CallsThatEndInTimeAreLeftAlone) {
  Handed handed;
  {
    CallWatch watch(1ms, diagnose_into(handed), overdue_into(handed));
    for (int i = 0; i < 20; ++i) {
      const OpContext ctx = call(60s);
      const CallWatch::Watched watched(watch, ctx);
      std::this_thread::sleep_for(2ms);  // looked at while it runs, never overdue
    }
    std::this_thread::sleep_for(20ms);  // and looked at with nothing watched
  }
  EXPECT_TRUE(handed.diagnosed.empty());
  EXPECT_TRUE(handed.messages.empty());
}

TEST(CallWatch, ACallThatEndsWhileItsPeersAreAskedIsNotHandedOver) {
  std::promise<void> asking;
  std::promise<void> ended;
  std::shared_future<void> ended_future = ended.get_future().share();
  Handed handed;
  {
    CallWatch watch(
        5ms,
        [&](const OpContext& ctx) {
          asking.set_value();
          ended_future.wait();  // the call ends while the diagnosis runs
          return ctx.what + ": not finished after 30 ms";
        },
        overdue_into(handed));
    {
      const OpContext ctx = call(30ms);
      const CallWatch::Watched watched(watch, ctx);
      ASSERT_EQ(asking.get_future().wait_for(60s), std::future_status::ready);
    }
    ended.set_value();
  }  // the watch's thread has finished with the call once the watch is gone
  EXPECT_TRUE(handed.messages.empty());
}

}  // namespace
