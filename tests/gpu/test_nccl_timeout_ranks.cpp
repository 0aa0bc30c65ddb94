// The NCCL backend's own multi-rank behaviour, on ranks that share GPU 0
// (dtrain/dist/shared_gpu.h): a collective that one rank never calls times
// out on the others, naming that rank (Note [Which rank a timeout waited
// on]), instead of hanging. Skips without a visible CUDA device.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "backend_ranks.h"
#include "dtrain/dist/types.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
using Clock = std::chrono::steady_clock;

TEST(NcclRanks, RankThatNeverCallsTheCollectiveIsNamed) {
  const auto backend = dtrain::testing::nccl_on_shared_gpu();
  if (!backend.available()) {
    GTEST_SKIP() << backend.missing;
  }
  constexpr int kWorld = 3;
  constexpr int kLate = 2;
  dtrain::testing::run_backend_ranks(backend, kWorld, 3s, [&](int rank, int, c10::Device device) {
    at::Tensor t = at::ones({4}, device);
    dist::all_reduce(t);  // #1, every rank
    EXPECT_EQ(t[0].item<float>(), kWorld);
    if (rank == kLate) {
      std::this_thread::sleep_for(15s);  // never calls #2; reports nothing
      std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    const auto start = Clock::now();
    auto work = dist::all_reduce(t, dist::ReduceOp::kSum, nullptr, /*async_op=*/true);
    try {
      work->wait(30s);  // a wait with a limit waits on the host
      ADD_FAILURE() << "all_reduce #2 finished without rank " << kLate;
    } catch (const dist::CollectiveTimeoutError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("all_reduce(SUM) on group 'default' (nccl), rank " +
                             std::to_string(rank) + " of 3"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("not finished after 3000 ms"), std::string::npos) << message;
      EXPECT_NE(message.find("rank(s) 2 did not reach this all_reduce(SUM) (#2 on group "
                             "'default')"),
                std::string::npos)
          << message;
      EXPECT_EQ(message.find("rank(s) 0 did not"), std::string::npos) << message;
      EXPECT_EQ(message.find("rank(s) 1 did not"), std::string::npos) << message;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a CollectiveTimeoutError: " << e.what();
    }
    // The timeout (3 s), the diagnosis's grace and slack for a shared GPU.
    EXPECT_LT(Clock::now() - start, 12s);
    std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
  });
}

}  // namespace
