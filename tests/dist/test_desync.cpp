// Desync detection (DTRAIN_DIST_DEBUG=1): ranks that call different
// collectives, shapes or dtypes all raise, naming what each rank called;
// matching calls still run and give the right results.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdlib>
#include <functional>
#include <thread>

#include "dtrain/dist/debug_process_group.h"
#include "dtrain/dist/init.h"
#include "gloo_ranks.h"
#include "multi_process.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
using Clock = std::chrono::steady_clock;

using dtrain::testing::expect_all_ranks_pass;

void init_debug(int rank, int world, std::uint16_t port) {
  setenv("DTRAIN_DIST_DEBUG", "1", 1);
  dtrain::testing::init_gloo_group(rank, world, port, 20s);
  ASSERT_NE(std::dynamic_pointer_cast<dist::DebugProcessGroup>(dist::default_group()), nullptr)
      << "DTRAIN_DIST_DEBUG=1 did not wrap the group";
}

// The calls every rank but the last makes, and what the last rank makes instead.
struct Mismatch {
  std::string name;
  std::function<void(bool odd_one)> call;
  std::string usual;  // how the usual call is described
  std::string odd;    // how the odd one is described
};

std::string expected_message(int seq, int world, const Mismatch& m) {
  std::string text = "collective #" + std::to_string(seq) + " mismatch: ";
  for (int r = 0; r < world; ++r) {
    text += (r > 0 ? ", " : "") + std::string("rank ") + std::to_string(r) + " called " +
            (r == world - 1 ? m.odd : m.usual);
  }
  return text;
}

std::vector<Mismatch> mismatches() {
  return {
      {"op",
       [](bool odd) {
         at::Tensor t = at::ones({4});
         odd ? dist::broadcast(t, 0) : dist::all_reduce(t);
       },
       "all_reduce(SUM) float32[4]", "broadcast(root 0) float32[4]"},
      {"shape",
       [](bool odd) {
         at::Tensor t = at::ones({odd ? 5 : 4});
         dist::all_reduce(t, dist::ReduceOp::kMax);
       },
       "all_reduce(MAX) float32[4]", "all_reduce(MAX) float32[5]"},
      {"dtype",
       [](bool odd) {
         at::Tensor t = at::ones({2, 3}, odd ? at::kDouble : at::kFloat);
         dist::reduce(t, 1, dist::ReduceOp::kSum);
       },
       "reduce(SUM, root 1) float32[2, 3]", "reduce(SUM, root 1) float64[2, 3]"},
      {"root",
       [](bool odd) {
         at::Tensor t = at::ones({3}, at::kInt);
         dist::broadcast(t, odd ? 1 : 0);
       },
       "broadcast(root 0) int32[3]", "broadcast(root 1) int32[3]"},
  };
}

class Desync : public ::testing::TestWithParam<int> {};

TEST_P(Desync, EveryRankNamesTheMismatch) {
  const int world = GetParam();
  for (const auto& m : mismatches()) {
    SCOPED_TRACE("mismatch in " + m.name);
    const auto port = dtrain::testing::free_port();
    const auto start = Clock::now();
    expect_all_ranks_pass(dtrain::testing::run_ranks(
        world,
        [&](int rank) {
          init_debug(rank, world, port);
          // Two matching collectives first: the mismatch is #3.
          at::Tensor warm = at::full({2}, rank + 1.0);
          dist::all_reduce(warm);
          EXPECT_TRUE(at::equal(warm, at::full({2}, world * (world + 1) / 2.0)));
          dist::barrier();
          try {
            m.call(rank == world - 1);
            ADD_FAILURE() << "rank " << rank << ": the mismatched collective did not raise";
          } catch (const dist::CollectiveError& e) {
            const std::string message = e.what();
            EXPECT_NE(message.find(expected_message(3, world, m)), std::string::npos)
                << "rank " << rank << " got: " << message;
          }
          std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
        },
        60s));
    EXPECT_LT(Clock::now() - start, 10s);
  }
}

TEST_P(Desync, MatchingCallsStillWork) {
  const int world = GetParam();
  const auto port = dtrain::testing::free_port();
  expect_all_ranks_pass(dtrain::testing::run_ranks(world, [&](int rank) {
    init_debug(rank, world, port);
    const auto f = at::TensorOptions().dtype(at::kFloat);
    for (int round = 0; round < 3; ++round) {  // past the store's key clean-up
      at::Tensor t = at::full({4}, rank + 1.0, f);
      dist::all_reduce(t, dist::ReduceOp::kSum);
      EXPECT_TRUE(at::equal(t, at::full({4}, world * (world + 1) / 2.0, f)));
      at::Tensor b = at::full({3}, 10.0 * rank, f);
      dist::broadcast(b, world - 1);
      EXPECT_TRUE(at::equal(b, at::full({3}, 10.0 * (world - 1), f)));
      std::vector<at::Tensor> gathered(world, at::empty({2}, f));
      for (auto& g : gathered) {
        g = at::empty({2}, f);
      }
      dist::all_gather(gathered, at::full({2}, static_cast<double>(rank), f));
      for (int r = 0; r < world; ++r) {
        EXPECT_TRUE(at::equal(gathered[r], at::full({2}, static_cast<double>(r), f)));
      }
      std::vector<at::Tensor> blocks;
      for (int r = 0; r < world; ++r) {
        blocks.push_back(at::full({2}, static_cast<double>(r), f));
      }
      at::Tensor out = at::empty({2}, f);
      dist::reduce_scatter(out, blocks);
      EXPECT_TRUE(at::equal(out, at::full({2}, static_cast<double>(rank * world), f)));
      std::vector<at::Tensor> recv(world);
      for (auto& r : recv) {
        r = at::empty({2}, f);
      }
      dist::all_to_all(recv, blocks);
      for (int r = 0; r < world; ++r) {
        EXPECT_TRUE(at::equal(recv[r], at::full({2}, static_cast<double>(rank), f)));
      }
      dist::barrier();
    }
    dist::destroy_process_group();
  }));
}

TEST_P(Desync, RankThatNeverArrivesIsNamed) {
  const int world = GetParam();
  const auto port = dtrain::testing::free_port();
  expect_all_ranks_pass(dtrain::testing::run_ranks(world, [&](int rank) {
    at::set_num_threads(1);
    setenv("DTRAIN_DIST_DEBUG", "1", 1);
    dist::init_process_group({.backend = "gloo",
                              .init_method = "tcp://127.0.0.1:" + std::to_string(port),
                              .rank = rank,
                              .world_size = world,
                              .timeout = 1500ms});
    if (rank == world - 1) {
      std::this_thread::sleep_for(3s);  // never calls the collective
      std::_Exit(0);
    }
    at::Tensor t = at::ones({4});
    try {
      dist::all_reduce(t);
      ADD_FAILURE() << "all_reduce finished without rank " << world - 1;
    } catch (const dist::CollectiveError& e) {
      const std::string message = e.what();
      const bool named =
          message.find("collective #1: rank(s) " + std::to_string(world - 1) +
                       " did not reach it within 1500 ms") != std::string::npos &&
          message.find("rank 0 called all_reduce(SUM) float32[4]") != std::string::npos;
      // Rank 0 hosts the store and always names the missing rank; another
      // rank may see the store close first, when rank 0 gives up and exits:
      // before its own timeout ("collective #1: the store failed ...") or
      // while naming the missing ranks ("rank(s) ? (the store failed ...)").
      const bool store_gone = rank != 0 && message.find("collective #1: ") != std::string::npos &&
                              message.find("the store failed") != std::string::npos;
      EXPECT_TRUE(named || store_gone) << message;
      if (rank == 0) {
        EXPECT_NE(dynamic_cast<const dist::CollectiveTimeoutError*>(&e), nullptr) << message;
      }
    }
    std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
  }));
}

INSTANTIATE_TEST_SUITE_P(Worlds, Desync, ::testing::Values(2, 3));

TEST(DesyncFormat, DescribesCalls) {
  EXPECT_EQ(dist::describe_call("all_reduce(SUM)", {at::ones({4})}), "all_reduce(SUM) float32[4]");
  EXPECT_EQ(dist::describe_call("gather(root 2)", {at::ones({2, 3}, at::kBFloat16)}),
            "gather(root 2) bfloat16[2, 3]");
  EXPECT_EQ(dist::describe_call("broadcast(root 0)", {at::scalar_tensor(1, at::kByte)}),
            "broadcast(root 0) uint8[]");
}

TEST(DesyncFormat, OffUnlessTheVariableIsOne) {
  setenv("DTRAIN_DIST_DEBUG", "0", 1);
  EXPECT_FALSE(dist::dist_debug_enabled());
  setenv("DTRAIN_DIST_DEBUG", "1", 1);
  EXPECT_TRUE(dist::dist_debug_enabled());
  unsetenv("DTRAIN_DIST_DEBUG");
  EXPECT_FALSE(dist::dist_debug_enabled());
}

}  // namespace
