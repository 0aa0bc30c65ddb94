// dtrain::dist::spawn, torch.multiprocessing.spawn's counterpart: the ranks
// it forks meet and run the function; a failing rank stops the others at
// once and is named; started by a launcher, spawn_or_join runs one rank here.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "dtrain/dist/init.h"
#include "dtrain/dist/spawn.h"
#include "expect_error.h"
#include "multi_process.h"
#include "test_support.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
namespace fs = std::filesystem;
using dtrain::testing::expect_error;

dist::SpawnOptions on_free_port(int nprocs) {
  return {.nprocs = nprocs,
          .master_port = static_cast<int>(dtrain::testing::free_port()),
          .timeout = 30s};
}

// Each rank writes what it saw to `dir`/rank<R>: side effects stay in the
// forked processes, so files carry them back.
TEST(Spawn, RanksMeetAndRunTheFunction) {
  dtrain::testing::TempDir dir;
  dist::spawn(on_free_port(3), [&](int rank, int size) {
    at::Tensor t = at::full({1}, rank + 1.0);
    dist::all_reduce(t);
    std::ofstream(dir.file("rank" + std::to_string(rank)))
        << size << " " << dist::get_rank() << " " << t.item<double>();
  });
  for (int rank = 0; rank < 3; ++rank) {
    std::ifstream in(dir.file("rank" + std::to_string(rank)));
    int size = 0;
    int group_rank = -1;
    double sum = 0;
    ASSERT_TRUE(in >> size >> group_rank >> sum) << "rank " << rank << " wrote nothing";
    EXPECT_EQ(size, 3);
    EXPECT_EQ(group_rank, rank);
    EXPECT_EQ(sum, 6.0);
  }
}

// Rank 1 fails while the others wait for it in a barrier (for 30 s): they
// are stopped at once (or fail on their own, as Gloo sees the peer go), and
// rank 1 is named as the cause.
TEST(Spawn, AFailingRankStopsTheOthersAndIsNamed) {
  const auto start = std::chrono::steady_clock::now();
  try {
    dist::spawn(on_free_port(3), [](int rank, int) {
      if (rank == 1) {
        throw std::runtime_error("no data for rank 1");
      }
      dist::barrier();
    });
    ADD_FAILURE() << "spawn returned although rank 1 failed";
  } catch (const dtrain::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("spawn: rank 1 failed: no data for rank 1 (the first "
                                          "rank to fail; the others were stopped",
                                          0),
              0u)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s) << "the others waited for rank 1";
}

TEST(Spawn, BadOptionsAreNamedBeforeAnythingStarts) {
  bool ran = false;
  const auto run = [&](int, int) { ran = true; };
  expect_error([&] { dist::spawn({.nprocs = 0}, run); }, "spawn: nprocs must be >= 1, got 0");
  expect_error([&] { dist::spawn({.master_port = 0}, run); },
               "spawn: master_port must be in 1..65535, got 0");
  EXPECT_FALSE(ran);
}

// Under a launcher (here its variables, for a job of one), the function
// runs in this very process as the launcher's rank.
TEST(Spawn, UnderALauncherSpawnOrJoinRunsTheOneRankHere) {
  dtrain::testing::ScopedEnv env;
  env.set("RANK", "0");
  env.set("WORLD_SIZE", "1");
  env.set("MASTER_ADDR", "127.0.0.1");
  env.set("MASTER_PORT", std::to_string(dtrain::testing::free_port()).c_str());
  int seen_size = 0;
  dist::spawn_or_join({.nprocs = 4}, [&](int rank, int size) {
    EXPECT_EQ(rank, 0);
    seen_size = size;
  });
  EXPECT_EQ(seen_size, 1) << "the function did not run in this process";
  EXPECT_FALSE(dist::is_initialized()) << "the group was left behind";
}

}  // namespace
