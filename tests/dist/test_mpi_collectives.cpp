// The mpi backend's conformance: every case of collective_conformance.h,
// then what is the mpi backend's own (timeouts, a message of the wrong
// size). A GoogleTest program run by test_mpi_run.sh under mpirun with 2,
// 3 or 4 ranks: every rank runs every test in the same order on one default
// group, reports its own failures, and exits non-zero on any; mpirun then
// fails too. Rank 0 prints GoogleTest's report, the others only their
// failures.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "collective_conformance.h"
#include "dtrain/dist/init.h"
#include "dtrain/util/process_setup.h"
#include "expect_error.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;
using dtrain::testing::CollectiveCase;
using dtrain::testing::CollectiveWorld;
using dtrain::testing::expect_error;

// mpirun's rank and size (OMPI_COMM_WORLD_*), read before GoogleTest
// registers the cases for this world size.
int g_rank = -1;
int g_world = 0;

int env_int(const char* name) {
  const char* text = std::getenv(name);
  return text == nullptr ? -1 : std::atoi(text);
}

std::vector<int> all_ranks() {
  std::vector<int> ranks(g_world);
  for (int r = 0; r < g_world; ++r) {
    ranks[r] = r;
  }
  return ranks;
}

// ---- The shared suite --------------------------------------------------

class MpiConformance : public ::testing::TestWithParam<CollectiveCase> {};

TEST_P(MpiConformance, Case) {
  const CollectiveCase& conformance_case = GetParam();
  try {
    conformance_case.run(CollectiveWorld{.rank = g_rank, .world = g_world, .backend = "mpi"});
    dist::barrier();
  } catch (const std::exception& e) {
    // The peers may now wait on this rank in a collective it left: end the
    // job (mpirun stops the others) rather than let the next tests hang.
    std::cerr << "rank " << g_rank << ": " << conformance_case.name << " raised: " << e.what()
              << "; ending the job" << std::endl;
    std::_Exit(1);
  }
}

INSTANTIATE_TEST_SUITE_P(Mpi, MpiConformance,
                         ::testing::ValuesIn(dtrain::testing::conformance_cases_for("mpi",
                                                                                    g_world)),
                         [](const auto& info) { return info.param.name; });

// ---- The mpi backend's own ---------------------------------------------

// A receive whose sender's tensor is larger says so, without writing past
// its tensor. (libgloo ends the receiving process instead:
// docs/design/decisions.md, Gloo backend.)
TEST(MpiPointToPoint, ALargerMessageThanTheReceiveIsNamed) {
  if (g_rank == 0) {
    dist::send(at::ones({5}), 1, nullptr, 8);
  } else if (g_rank == 1) {
    at::Tensor smaller = at::zeros({6});
    at::Tensor head = smaller.narrow(0, 0, 4);
    expect_error<dist::CollectiveError>(
        [&] { dist::recv(head, 0, nullptr, 8); },
        "recv from rank 0 on group 'default' (mpi), rank 1 of " + std::to_string(g_world) +
            ": received more than the expected 16 bytes (the sender's tensor has a different "
            "size or dtype)");
    EXPECT_EQ(smaller[4].item<float>(), 0.0f) << "written past the tensor: " << smaller;
  }
  dist::barrier();
}

// What rank 0 raises when its first all_reduce on `group`, with a 300 ms
// timeout, finds no other rank there: each is named as not reaching it.
std::string nobody_else_came(const dist::ProcessGroup& group) {
  std::string others;
  for (int r = 1; r < g_world; ++r) {
    others += (r > 1 ? ", " : "") + std::to_string(r);
  }
  return "all_reduce(SUM) on group '" + group.name() + "' (mpi), rank 0 of " +
         std::to_string(g_world) +
         ": not finished after 300 ms (a rank did not join, or joined a different collective); "
         "rank(s) " +
         others + " did not reach this all_reduce(SUM) (#1 on group '" + group.name() +
         "'): rank(s) " + others + " reported no timeout within 300 ms";
}

// Only rank 0 joins a collective (yet): it times out and breaks its group.
// The others wait in the default group's barrier, so none reports a timeout
// in this one: each is named as not reaching it (Note [Which rank a timeout
// waited on]). They join afterwards, so rank 0's abandoned operations
// complete in the background.
TEST(MpiTimeouts, NameTheOpTheGroupTheRankAndWhoNeverCame) {
  auto doomed = dist::new_group(all_ranks());
  at::Tensor t = at::ones({3});
  if (g_rank == 0) {
    expect_error<dist::CollectiveTimeoutError>(
        [&] { doomed->all_reduce(t, {.timeout = 300ms})->wait(); }, nobody_else_came(*doomed));
    expect_error<dist::CollectiveError>([&] { doomed->barrier()->wait(); },
                                        "unusable since an earlier collective timed out");
    // A receive nobody sends (yet) times out too.
    at::Tensor never = at::empty({2});
    expect_error<dist::CollectiveTimeoutError>(
        [&] { dist::irecv(never, 1, nullptr, 99)->wait(200ms); },
        "recv from rank 1 on group 'default' (mpi), rank 0 of");
  }
  dist::barrier();
  if (g_rank != 0) {
    doomed->all_reduce(t)->wait();
  }
  if (g_rank == 1) {
    dist::send(at::ones({2}), 0, nullptr, 99);
  }
  dist::barrier();
}

// Note [Which rank a timeout waited on] as on Gloo: every rank but the last
// reaches a collective, which times out; each names the last rank, and only
// it, and sees the others time out in it too.
TEST(MpiTimeouts, ARankThatSkipsACollectiveIsNamed) {
  auto group = dist::new_group(all_ranks());
  const int late = g_world - 1;
  at::Tensor t = at::ones({2});
  group->all_reduce(t)->wait();  // #1, by everyone
  EXPECT_EQ(t[0].item<float>(), g_world) << "all_reduce #1";
  if (g_rank != late) {
    try {
      group->all_reduce(t, {.timeout = 2s})->wait();
      ADD_FAILURE() << "all_reduce #2 finished without rank " << late;
    } catch (const dist::CollectiveTimeoutError& e) {
      const std::string message = e.what();
      const std::string label = "all_reduce(SUM) (#2 on group '" + group->name() + "')";
      EXPECT_NE(
          message.find("; rank(s) " + std::to_string(late) + " did not reach this " + label +
                       ": rank(s) " + std::to_string(late) + " reported no timeout within 2000 ms"),
          std::string::npos)
          << message;
      for (int r = 0; r < late; ++r) {
        EXPECT_EQ(message.find("rank(s) " + std::to_string(r) + " did not"), std::string::npos)
            << "a victim named: " << message;
      }
      if (g_world > 2) {
        EXPECT_NE(message.find("timed out in it too"), std::string::npos) << message;
      }
    }
  }
  dist::barrier();
  if (g_rank == late) {
    group->all_reduce(t)->wait();  // lets the others' abandoned #2 complete
  }
  dist::barrier();
}

// A collective nobody waits on runs on the group's worker rather than on a
// waiter's thread (Note [The waiter runs its task], work_queue.h); it times
// out there the same way, naming who never came.
TEST(MpiTimeouts, ACollectiveLeftToTheWorkerNamesWhoNeverCame) {
  auto doomed = dist::new_group(all_ranks());
  at::Tensor t = at::ones({3});
  if (g_rank == 0) {
    auto work = doomed->all_reduce(t, {.timeout = 300ms});
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (!work->is_completed() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_TRUE(work->is_completed()) << "the worker never finished the timed-out all_reduce";
    expect_error<dist::CollectiveTimeoutError>([&] { work->wait(); }, nobody_else_came(*doomed));
  }
  dist::barrier();
  if (g_rank != 0) {
    doomed->all_reduce(t)->wait();  // lets rank 0's abandoned one complete
  }
  dist::barrier();
}

// libnbc's two schedules, the pieces (Note [libnbc's all-reduce schedule],
// mpi_schedule.cpp) and the blocking MPI_Allreduce from 64 to 128 KiB
// (16 Ki + 1 floats, 40001 halves), below, between and above the eager
// sizes that choose them, with MPI's ops and dtrain's own for 2-byte
// floats, on counts that do not split evenly.
TEST(MpiAllReduce, EveryScheduleReducesExactly) {
  for (const std::int64_t count : {1001, 16 * 1024 + 1, 40001, 100003}) {
    for (const auto dtype : {at::kFloat, at::kHalf, at::kLong}) {
      const at::Tensor pattern = at::arange(count, at::kLong).remainder(7);
      at::Tensor sum = (pattern + g_rank).to(dtype);
      at::Tensor max = (pattern + g_rank).to(dtype);
      dist::all_reduce(sum);
      dist::all_reduce(max, dist::ReduceOp::kMax);
      const at::Tensor want_sum = (pattern * g_world + g_world * (g_world - 1) / 2).to(dtype);
      const at::Tensor want_max = (pattern + g_world - 1).to(dtype);
      EXPECT_TRUE(at::equal(sum, want_sum)) << count << " " << dtype << ": SUM";
      EXPECT_TRUE(at::equal(max, want_max)) << count << " " << dtype << ": MAX";
    }
  }
}

// ---- The job -----------------------------------------------------------

// One default group for every test. A world size that is not MPI's is
// refused before anyone meets in the store. A collective that hangs fails
// after 20 s instead of running into ctest's timeout.
class MpiDefaultGroup : public ::testing::Environment {
 public:
  void SetUp() override {
    expect_error(
        [] {
          dist::init_process_group({.backend = "mpi", .world_size = g_world + 1, .timeout = 5s});
        },
        "MPI says this process is rank " + std::to_string(g_rank) + " of " +
            std::to_string(g_world));
    ASSERT_FALSE(dist::is_initialized()) << "a failed init left a group behind";
    dist::init_process_group({.backend = "mpi", .timeout = 20s});
    ASSERT_EQ(dist::get_rank(), g_rank);
    ASSERT_EQ(dist::get_world_size(), g_world);
  }
  void TearDown() override {
    if (dist::is_initialized()) {
      dist::destroy_process_group();
    }
  }
};

// Ranks other than 0 print only their failures, each line with the rank,
// so that the job's output is one report.
class FailuresOnly : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (result.failed()) {
      std::cerr << "rank " << g_rank << ": " << (result.file_name() ? result.file_name() : "?")
                << ":" << result.line_number() << ": " << result.summary() << std::endl;
    }
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::cerr << "rank " << g_rank << ": FAILED " << info.test_suite_name() << "." << info.name()
                << std::endl;
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  g_rank = env_int("OMPI_COMM_WORLD_RANK");
  g_world = env_int("OMPI_COMM_WORLD_SIZE");
  if (g_rank < 0 || g_world < 0) {
    std::cerr << "run me under mpirun (OMPI_COMM_WORLD_RANK/SIZE are unset)\n";
    return 2;
  }
  if (g_world < 2) {
    std::cerr << "run me with at least 2 ranks, got " << g_world << "\n";
    return 2;
  }
  at::set_num_threads(1);
  GTEST_FLAG_SET(color, "no");  // mpirun may give rank 0 a terminal; the log is read as text
  ::testing::InitGoogleTest(&argc, argv);
  if (g_rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailuresOnly);
  }
  ::testing::AddGlobalTestEnvironment(new MpiDefaultGroup);
  return RUN_ALL_TESTS();
}
