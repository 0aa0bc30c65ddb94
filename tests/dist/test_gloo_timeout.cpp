// Note [Which rank a timeout waited on] (sdk/src/dist/timeout_diagnosis.h)
// on forked Gloo ranks sharing a file store: a collective that times out
// because one rank never calls it names that rank, and only that rank; a
// job whose collectives succeed writes nothing for it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "dtrain/dist/process_group_gloo.h"
#include "dtrain/dist/types.h"
#include "dtrain/store/file_store.h"
#include "gloo_ranks.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
namespace store = dtrain::store;
using Clock = std::chrono::steady_clock;

std::string store_path(const char* name) {
  const std::string path =
      ::testing::TempDir() + "gloo_timeout_" + name + "_" + std::to_string(::getpid());
  ::unlink(path.c_str());
  return path;
}

// Rank `rank`'s group over the shared file store, reached on loopback.
std::shared_ptr<dist::ProcessGroupGloo> join(const std::shared_ptr<store::Store>& store, int rank,
                                             int world, std::chrono::milliseconds timeout) {
  at::set_num_threads(1);
  dist::GlooOptions options;
  options.timeout = timeout;
  options.hostname = "127.0.0.1";
  return std::make_shared<dist::ProcessGroupGloo>(store, rank, world, options);
}

TEST(GlooTimeout, RankThatNeverCallsTheCollectiveIsNamed) {
  constexpr int kWorld = 3;
  constexpr int kLate = 2;
  const std::string path = store_path("late");
  dtrain::testing::expect_all_ranks_pass(dtrain::testing::run_ranks(kWorld, [&](int rank) {
    auto store = std::make_shared<store::FileStore>(path, 30s);
    auto group = join(store, rank, kWorld, 2s);
    at::Tensor t = at::ones({4});
    group->all_reduce(t)->wait();  // #1 succeeds
    EXPECT_EQ(t[0].item<float>(), kWorld);
    if (rank == kLate) {
      std::this_thread::sleep_for(8s);  // never calls #2; reports nothing
      std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    const auto start = Clock::now();
    try {
      group->all_reduce(t)->wait();
      ADD_FAILURE() << "all_reduce #2 finished without rank " << kLate;
    } catch (const dist::CollectiveTimeoutError& e) {
      const std::string message = e.what();
      // The transport's error stays, with the diagnosis after it.
      EXPECT_NE(message.find("all_reduce(SUM) on group 'default' (gloo), rank " +
                             std::to_string(rank) + " of 3: "),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("imed out"), std::string::npos) << message;
      EXPECT_NE(message.find("; rank(s) 2 did not reach this all_reduce(SUM) (#2 on group "
                             "'default'): rank(s) 2 reported no timeout within 2000 ms"),
                std::string::npos)
          << message;
      // The other victim reached it and timed out too; it is not the culprit.
      const std::string other = std::to_string(1 - rank);
      EXPECT_NE(message.find("; rank(s) " + other + " timed out in it too"), std::string::npos)
          << message;
      EXPECT_EQ(message.find("rank(s) 0 did not"), std::string::npos) << message;
      EXPECT_EQ(message.find("rank(s) 1 did not"), std::string::npos) << message;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a CollectiveTimeoutError: " << e.what();
    }
    // The timeout (2 s), the grace (2 s) and slack for a loaded machine.
    EXPECT_LT(Clock::now() - start, 7s);
    std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
  }));
}

// Connecting waits for every rank's address in the store; a rank that never
// comes is a timeout of the group's construction, and says so.
TEST(GlooTimeout, ARankThatNeverConnectsIsATimeoutOfConnecting) {
  const std::string path = store_path("connect");
  dtrain::testing::expect_all_ranks_pass(dtrain::testing::run_ranks(1, [&](int) {
    auto store = std::make_shared<store::FileStore>(path, 30s);
    const auto start = Clock::now();
    try {
      join(store, 0, 2, 1000ms);
      ADD_FAILURE() << "connected without rank 1";
    } catch (const dist::CollectiveTimeoutError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("not every rank joined in time"), std::string::npos) << message;
      EXPECT_EQ(message.find("Exception raised from"), std::string::npos) << message;
    }
    EXPECT_LT(Clock::now() - start, 10s);
  }));
}

TEST(GlooTimeout, CollectivesThatSucceedWriteNothingForTheDiagnosis) {
  constexpr int kWorld = 3;
  const std::string path = store_path("ok");
  dtrain::testing::expect_all_ranks_pass(dtrain::testing::run_ranks(kWorld, [&](int rank) {
    auto store = std::make_shared<store::FileStore>(path, 30s);
    auto group = join(store, rank, kWorld, 10s);
    for (int i = 0; i < 5; ++i) {
      at::Tensor t = at::full({3}, static_cast<float>(rank));
      group->all_reduce(t)->wait();
      EXPECT_EQ(t[0].item<float>(), 0 + 1 + 2);
      at::Tensor b = at::full({2}, static_cast<float>(rank));
      group->broadcast(b, {.root = i % kWorld})->wait();
      EXPECT_EQ(b[0].item<float>(), i % kWorld);
    }
    group->barrier()->wait();
    for (int r = 0; r < kWorld; ++r) {
      EXPECT_FALSE(store->check({"gloo/default/timeout/" + std::to_string(r)})) << "rank " << r;
    }
    group->barrier()->wait();  // nobody leaves while another still reads the store
  }));
}

}  // namespace
