// What goes wrong when a job starts or runs badly must end in a clear error
// on the ranks concerned, within the timeout -- never a hang.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>

#include "dtrain/dist/init.h"
#include "dtrain/store/file_store.h"
#include "expect_error.h"
#include "multi_process.h"
#include "test_support.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
namespace store = dtrain::store;
using Clock = std::chrono::steady_clock;

dist::InitOptions tcp(std::uint16_t port, int rank, int world, std::chrono::milliseconds timeout) {
  return {.backend = "gloo",
          .init_method = "tcp://127.0.0.1:" + std::to_string(port),
          .rank = rank,
          .world_size = world,
          .timeout = timeout};
}

// Ranks that disagree (Note [A conflict at rendezvous] in
// sdk/src/dist/membership.cpp) stop every process well within this, under
// a timeout of kPatience.
constexpr auto kPrompt = 10s;
constexpr auto kPatience = 60s;

// Runs init, which must fail within kPrompt with a message that `names`
// accepts; returns 0 when it does (the parent counts the processes).
int fails_promptly(const dist::InitOptions& options,
                   const std::function<bool(const std::string&)>& names) {
  const auto start = Clock::now();
  try {
    dist::init_process_group(options);
    dist::destroy_process_group();
    std::fprintf(stderr, "rank %d: joined a job whose ranks disagree\n", options.rank);
    return 1;
  } catch (const dtrain::Error& e) {
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    std::fprintf(stderr, "rank %d, after %lld ms: %s\n", options.rank,
                 static_cast<long long>(took.count()), e.what());
    if (took > kPrompt) {
      return 2;
    }
    return names(e.what()) ? 0 : 3;
  }
}

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

TEST(InitErrors, RankThatNeverJoinsMakesTheOthersRaise) {
  const auto port = dtrain::testing::free_port();
  const auto start = Clock::now();
  // World of 3, but only ranks 0 and 1 start.
  const auto codes = dtrain::testing::run_ranks(2, [&](int rank) {
    try {
      dist::init_process_group(tcp(port, rank, 3, 1500ms));
      ADD_FAILURE() << "init succeeded without rank 2";
    } catch (const dist::CollectiveError& e) {
      // Rank 0 hosts the store and names the missing rank; another rank may
      // instead see the store go away when rank 0 gives up first.
      const std::string message = e.what();
      const bool named = message.find("rank(s) 2 of 3 never joined") != std::string::npos;
      EXPECT_TRUE(named ||
                  (rank != 0 && message.find("for all 3 ranks to join") != std::string::npos))
          << message;
    }
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
  EXPECT_LT(Clock::now() - start, 20s);
}

// Rank 2 never comes, so only the record of the second claim can end the
// wait: every process, not only the second claimant, names the rank and
// both processes, long before the timeout.
TEST(InitErrors, TwoProcessesClaimingOneRank) {
  const auto port = dtrain::testing::free_port();
  const auto codes = dtrain::testing::run_ranks(3, [&](int process) {
    const int rank = std::min(process, 1);  // ranks 0, 1, 1
    std::_Exit(fails_promptly(tcp(port, rank, 3, kPatience), [&](const std::string& message) {
      return contains(message, "init_process_group: rank " + std::to_string(rank) +
                                   ": the job's ranks disagree: rank 1 was claimed twice: by "
                                   "process ") &&
             contains(message, " and by process ") &&
             contains(message, "; every process needs its own rank");
    }));
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0}));
}

// Rank 0 (world size 2) waits for rank 1, which came with world size 3:
// both fail at once, naming both ranks and both sizes, whichever recorded
// its size first.
TEST(InitErrors, RanksDisagreeingOnTheWorldSize) {
  const auto port = dtrain::testing::free_port();
  const auto codes = dtrain::testing::run_ranks(2, [&](int rank) {
    std::_Exit(
        fails_promptly(tcp(port, rank, rank + 2, kPatience), [&](const std::string& message) {
          const std::string prefix =
              "init_process_group: rank " + std::to_string(rank) + ": the job's ranks disagree: ";
          return contains(message, prefix +
                                       "rank 1 was started with world size 3, rank 0 with world "
                                       "size 2; start every process with the same world size") ||
                 contains(message, prefix +
                                       "rank 0 was started with world size 2, rank 1 with world "
                                       "size 3; start every process with the same world size");
        }));
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

TEST(InitErrors, MasterThatNeverAnswers) {
  const auto port = dtrain::testing::free_port();
  const auto start = Clock::now();
  const auto codes = dtrain::testing::run_ranks(1, [&](int) {
    try {
      dist::init_process_group(tcp(port, /*rank=*/1, /*world=*/2, 1000ms));
      ADD_FAILURE() << "init succeeded without a master";
    } catch (const dist::CollectiveTimeoutError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("could not reach the master"), std::string::npos) << message;
      EXPECT_NE(message.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << message;
    }
  });
  EXPECT_EQ(codes, (std::vector<int>{0}));
  EXPECT_LT(Clock::now() - start, 10s);
}

TEST(InitErrors, CollectiveThatAPeerNeverJoinsTimesOut) {
  const auto port = dtrain::testing::free_port();
  const auto codes = dtrain::testing::run_ranks(2, [&](int rank) {
    dist::init_process_group(tcp(port, rank, 2, 1500ms));
    if (rank == 1) {
      std::this_thread::sleep_for(4s);  // never calls all_reduce
      std::_Exit(0);
    }
    const auto start = Clock::now();
    at::Tensor t = at::ones({4});
    try {
      dist::all_reduce(t);
      ADD_FAILURE() << "all_reduce finished without its peer";
    } catch (const dist::CollectiveTimeoutError& e) {
      EXPECT_NE(
          std::string(e.what()).find("all_reduce(SUM) on group 'default' (gloo), rank 0 of 2"),
          std::string::npos)
          << e.what();
    }
    EXPECT_LT(Clock::now() - start, 3500ms);
    std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// Expects resolve_rendezvous to reject options, naming the problem.
void expect_rejected(const dist::InitOptions& options, const std::string& fragment) {
  try {
    dist::resolve_rendezvous(options);
    ADD_FAILURE() << "accepted " << options.init_method;
  } catch (const dtrain::Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(InitErrors, BadOptionsAreNamedBeforeAnyContact) {
  expect_rejected({.init_method = "udp://x:1", .rank = 0, .world_size = 1},
                  "is not env://, tcp://host:port");
  expect_rejected({.init_method = "tcp://hostonly", .rank = 0, .world_size = 1},
                  "the port is missing; expected tcp://host:port");
  expect_rejected({.init_method = "tcp://h:99999", .rank = 0, .world_size = 1}, "port '99999'");
  expect_rejected({.init_method = "file://relative", .rank = 0, .world_size = 1}, "absolute path");
  expect_rejected({.init_method = "tcp://h:1", .rank = 4, .world_size = 4},
                  "rank 4 is outside the world of size 4");
  // Explicit values are the caller's: they are named, never replaced by the environment's.
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "2", 1);
  expect_rejected({.init_method = "tcp://h:1", .rank = 0, .world_size = 0},
                  "world_size must be >= 1 (or -1: from the environment), got 0");
  expect_rejected({.init_method = "tcp://h:1", .rank = -2, .world_size = 2},
                  "rank must be >= 0 (or -1: from the environment), got -2");
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  // IPv6 addresses: test_ipv6_init.cpp.
  unsetenv("MASTER_ADDR");
  expect_rejected({.init_method = "env://", .rank = 0, .world_size = 2}, "needs MASTER_ADDR");
}

TEST(InitEnv, ReadsTheLaunchersVariables) {
  setenv("MASTER_ADDR", "10.1.2.3", 1);
  setenv("MASTER_PORT", "29511", 1);
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  const auto rdzv = dist::resolve_rendezvous({});
  EXPECT_EQ(rdzv.host, "10.1.2.3");
  EXPECT_EQ(rdzv.port, 29511);
  EXPECT_EQ(rdzv.rank, 3);
  EXPECT_EQ(rdzv.world_size, 8);
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
}

// Under mpirun, env:// without MASTER_PORT leaves the store's address to MPI
// (run end to end by the dist.mpirun_store_through_mpi_* tests); elsewhere
// MASTER_PORT stays required.
TEST(InitEnv, MpirunWithoutMasterPortLeavesTheAddressToMpi) {
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  unsetenv("MASTER_PORT");
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("MASTER_ADDR", "10.1.2.3", 1);
  auto rdzv = dist::resolve_rendezvous({});
  EXPECT_EQ(rdzv.kind, dist::Rendezvous::Kind::kMpi);
  EXPECT_EQ(rdzv.host, "10.1.2.3");
  EXPECT_EQ(rdzv.rank, 1);
  EXPECT_EQ(rdzv.world_size, 4);
  unsetenv("MASTER_ADDR");
  rdzv = dist::resolve_rendezvous({});
  EXPECT_EQ(rdzv.kind, dist::Rendezvous::Kind::kMpi);
  EXPECT_EQ(rdzv.host, "");
  // A port given is used as it is; tcp:// is never replaced.
  setenv("MASTER_ADDR", "10.1.2.3", 1);
  setenv("MASTER_PORT", "29512", 1);
  EXPECT_EQ(dist::resolve_rendezvous({}).kind, dist::Rendezvous::Kind::kTcp);
  EXPECT_EQ(dist::resolve_rendezvous({.init_method = "tcp://h:5"}).kind,
            dist::Rendezvous::Kind::kTcp);
  unsetenv("MASTER_PORT");
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  // Not under mpirun (torchrun's variables), the port is required.
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "2", 1);
  expect_rejected({}, "needs MASTER_PORT");
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  unsetenv("MASTER_ADDR");
}

// The last rank out deletes the file, so the same URL serves the next job
// (a file left behind would hold the previous job's rank claims).
TEST(InitFile, SameFileServesTheNextJob) {
  char dir_template[] = "/tmp/dtrain-file-reuse-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string url = "file://" + dir + "/rendezvous";
  for (int job = 0; job < 2; ++job) {
    const auto codes = dtrain::testing::run_ranks(2, [&](int rank) {
      dist::init_process_group(
          {.backend = "gloo", .init_method = url, .rank = rank, .world_size = 2, .timeout = 20s});
      at::Tensor t = at::full({2}, job + 1.0);
      dist::all_reduce(t);
      EXPECT_TRUE(at::equal(t, at::full({2}, 2.0 * (job + 1))));
      dist::destroy_process_group();
    });
    EXPECT_EQ(codes, (std::vector<int>{0, 0})) << "job " << job;
    EXPECT_FALSE(std::filesystem::exists(dir + "/rendezvous")) << "job " << job;
  }
  // A killed job's file (one that never counted itself out, of a world of
  // 1) is named in the error, with what to do.
  store::FileStore(dir + "/rendezvous").set("dtrain/0/init/world_size", "1");
  try {
    dist::init_process_group(
        {.backend = "gloo", .init_method = url, .rank = 0, .world_size = 2, .timeout = 5s});
    ADD_FAILURE() << "joined a killed job's store";
  } catch (const dtrain::Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds a previous job's records"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

// A process whose init failed (here: a rank that never came) may try
// again in the same process; its own earlier claim is not a rival's.
TEST(InitFile, RetryInTheSameProcessAfterAFailure) {
  char dir_template[] = "/tmp/dtrain-file-retry-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string url = "file://" + dir + "/rendezvous";
  const auto codes = dtrain::testing::run_ranks(2, [&](int rank) {
    if (rank == 0) {
      try {
        dist::init_process_group(
            {.backend = "gloo", .init_method = url, .rank = 0, .world_size = 2, .timeout = 300ms});
        ADD_FAILURE() << "init succeeded without rank 1";
      } catch (const dist::CollectiveError&) {
      }
    } else {
      std::this_thread::sleep_for(1s);  // after rank 0's first try gave up
    }
    dist::init_process_group(
        {.backend = "gloo", .init_method = url, .rank = rank, .world_size = 2, .timeout = 20s});
    dist::barrier();
    dist::destroy_process_group();
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
  std::filesystem::remove_all(dir);
}

TEST(InitFile, FileInitMethodJoinsTwoProcesses) {
  char dir_template[] = "/tmp/dtrain-file-init-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const auto codes = dtrain::testing::run_ranks(2, [&](int rank) {
    dist::init_process_group({.backend = "gloo",
                              .init_method = "file://" + dir + "/rendezvous",
                              .rank = rank,
                              .world_size = 2,
                              .timeout = 20s});
    at::Tensor t = at::full({3}, rank + 1.0);
    dist::all_reduce(t);
    EXPECT_TRUE(at::equal(t, at::full({3}, 3.0)));
    dist::destroy_process_group();
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
  std::filesystem::remove_all(dir);
}

// hvd.local_rank(): from whichever launcher's variables are set, else the
// fallback, else an error naming the variables.
TEST(InitEnv, NodeLocalRankFromEachLauncher) {
  dtrain::testing::ScopedEnv none;
  for (const char* name :
       {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
        "SLURM_LOCALID", "SLURM_PROCID", "SLURM_NTASKS", "RANK", "WORLD_SIZE"}) {
    none.set(name, nullptr);
  }
  EXPECT_EQ(dist::get_node_local_rank(3), 3);
  dtrain::testing::expect_error([] { dist::get_node_local_rank(); },
                                "no launcher variable gives this process's local rank (LOCAL_RANK, "
                                "OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID)");
  {
    dtrain::testing::ScopedEnv srun;
    srun.set("SLURM_PROCID", "5");
    srun.set("SLURM_NTASKS", "8");
    srun.set("SLURM_LOCALID", "1");
    EXPECT_EQ(dist::get_node_local_rank(3), 1);
  }
  {
    dtrain::testing::ScopedEnv mpirun;
    mpirun.set("OMPI_COMM_WORLD_RANK", "2");
    mpirun.set("OMPI_COMM_WORLD_SIZE", "4");
    mpirun.set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
    EXPECT_EQ(dist::get_node_local_rank(), 0);
  }
  dtrain::testing::ScopedEnv dtrun("LOCAL_RANK", "2");
  EXPECT_EQ(dist::get_node_local_rank(), 2);
}

// As srun starts a job: each process has only Slurm's variables (and the
// MASTER_ADDR/MASTER_PORT a batch script exports); init_process_group()
// takes rank and world size from them and the job runs.
TEST(InitEnv, ProcessesStartedBySrunJoinFromSlurmsVariables) {
  const auto port = dtrain::testing::free_port();
  const auto codes = dtrain::testing::run_ranks(2, [&](int rank) {
    for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                             "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"}) {
      unsetenv(name);
    }
    setenv("SLURM_PROCID", std::to_string(rank).c_str(), 1);
    setenv("SLURM_LOCALID", std::to_string(rank).c_str(), 1);
    setenv("SLURM_NTASKS", "2", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    dist::init_process_group({.backend = "gloo", .timeout = 20s});
    EXPECT_EQ(dist::get_rank(), rank);
    EXPECT_EQ(dist::get_world_size(), 2);
    at::Tensor t = at::full({2}, rank + 1.0);
    dist::all_reduce(t);
    EXPECT_TRUE(at::equal(t, at::full({2}, 3.0)));
    dist::destroy_process_group();
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

}  // namespace
