// NCCL through the conformance suite every backend runs
// (dist/collective_conformance.h), at world sizes 2, 3 and 4, every rank on
// GPU 0 as an NCCL host of its own (dtrain/dist/shared_gpu.h). Skips without
// a visible CUDA device.
//
// Starting NCCL ranks costs seconds, so one group per world size runs the
// cases in turn, as the MPI backend's program does. A case that ends in an
// exception (a timeout aborts the communicator) ends its group, and a fresh
// group carries on from the next case, so one failure does not hide the
// rest. The test prints one line per world that the GPU checks' summary
// copies: "nccl_conformance world=3: passed", or "...: failed: <first case>".
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "backend_ranks.h"
#include "collective_conformance.h"

namespace {

using namespace std::chrono_literals;
using dtrain::testing::CollectiveCase;
using dtrain::testing::CollectiveWorld;

// Collectives of the suite are small; a case that needs longer is stuck.
constexpr auto kCollectiveTimeout = 20s;

// How many failures the current GoogleTest test has recorded so far (in
// this process: a forked rank counts its own).
int failures_so_far() {
  const auto* result = ::testing::UnitTest::GetInstance()->current_test_info()->result();
  int failed = 0;
  for (int i = 0; i < result->total_part_count(); ++i) {
    failed += result->GetTestPartResult(i).failed() ? 1 : 0;
  }
  return failed;
}

// Runs cases[first..] in turn on this rank, appending "name\tpassed" or
// "name\tfailed\twhy" to `log` after each; stops after a case that raised
// (its group may be unusable).
void run_in_turn(const std::vector<CollectiveCase>& cases, std::size_t first,
                 const CollectiveWorld& w, const std::string& log) {
  for (std::size_t i = first; i < cases.size(); ++i) {
    const int before = failures_so_far();
    std::string raised;
    try {
      cases[i].run(w);
      dtrain::dist::barrier();
    } catch (const std::exception& e) {
      raised = e.what();
    }
    std::ofstream out(log, std::ios::app);
    if (!raised.empty()) {
      out << cases[i].name << "\tfailed\traised: " << raised << "\n";
      return;
    }
    out << cases[i].name
        << (failures_so_far() == before ? "\tpassed\n" : "\tfailed\tan assertion\n");
  }
}

struct CaseOutcome {
  int ranks = 0;        // ranks that logged the case
  bool passed = true;   // on every rank that logged it
  bool raised = false;  // on some rank: its group ended there
  std::string why;      // the first failing rank's reason
};

// Each case's outcome over every rank's log; cases no rank reached are absent.
std::map<std::string, CaseOutcome> read_logs(const std::filesystem::path& dir, int world) {
  std::map<std::string, CaseOutcome> outcomes;
  for (int rank = 0; rank < world; ++rank) {
    std::ifstream in(dir / ("rank" + std::to_string(rank) + ".log"));
    std::string line;
    while (std::getline(in, line)) {
      const auto tab = line.find('\t');
      const std::string status = line.substr(tab + 1);
      CaseOutcome& outcome = outcomes[line.substr(0, tab)];
      ++outcome.ranks;
      if (status.rfind("passed", 0) == 0) {
        continue;
      }
      const std::string why = status.substr(status.find('\t') + 1);
      outcome.raised = outcome.raised || why.rfind("raised", 0) == 0;
      if (outcome.passed) {
        outcome.passed = false;
        outcome.why = "rank " + std::to_string(rank) + ": " + why;
      }
    }
  }
  return outcomes;
}

// Runs cases[first..] on a fresh group of `world` NCCL ranks; returns each
// case's outcome up to the first that ended the group, in order.
std::vector<CaseOutcome> run_group(const std::vector<CollectiveCase>& cases, std::size_t first,
                                   int world, const dtrain::testing::RankBackend& backend) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("dtrain-nccl-conformance-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto port = dtrain::testing::free_port();
  // Exit codes are not judged: the logs say which case failed where.
  (void)dtrain::testing::run_ranks(
      world,
      [&](int rank) {
        dtrain::testing::init_backend_group(backend, rank, world, port, kCollectiveTimeout);
        run_in_turn(cases, first, {rank, world, "nccl", backend.device},
                    (dir / ("rank" + std::to_string(rank) + ".log")).string());
        dtrain::dist::destroy_process_group();
      },
      4 * kCollectiveTimeout + 120s);
  const auto logged = read_logs(dir, world);
  std::filesystem::remove_all(dir);
  std::vector<CaseOutcome> outcomes;
  for (std::size_t i = first; i < cases.size(); ++i) {
    const auto found = logged.find(cases[i].name);
    CaseOutcome outcome = found != logged.end() ? found->second : CaseOutcome{};
    if (outcome.ranks < world && outcome.passed) {
      outcome.passed = false;
      outcome.raised = true;
      outcome.why = std::to_string(world - outcome.ranks) + " of " + std::to_string(world) +
                    " ranks did not finish it (the group did not start, or a rank died: the "
                    "ranks' output is above)";
    }
    outcomes.push_back(outcome);
    if (outcome.raised) {
      break;
    }
  }
  return outcomes;
}

class NcclConformance : public ::testing::TestWithParam<int> {};

TEST_P(NcclConformance, EveryCase) {
  const int world = GetParam();
  const auto backend = dtrain::testing::nccl_on_shared_gpu();
  if (!backend.available()) {
    GTEST_SKIP() << backend.missing;
  }
  const std::vector<CollectiveCase> cases = dtrain::testing::conformance_cases_for("nccl", world);
  std::string first_failure;
  int groups_that_ended_at_once = 0;
  for (std::size_t next = 0; next < cases.size();) {
    const std::vector<CaseOutcome> outcomes = run_group(cases, next, world, backend);
    for (const CaseOutcome& outcome : outcomes) {
      const std::string& name = cases[next].name;
      std::printf("nccl world=%d %s: %s%s\n", world, name.c_str(),
                  outcome.passed ? "passed" : "failed: ", outcome.why.c_str());
      EXPECT_TRUE(outcome.passed) << name << " at world " << world << ": " << outcome.why;
      if (!outcome.passed && first_failure.empty()) {
        first_failure = name;
      }
      ++next;
    }
    // Twice a group that ended in its first case: NCCL does not work here
    // at all, and every later case would only wait out its timeout.
    groups_that_ended_at_once =
        outcomes.size() == 1 && outcomes[0].raised ? groups_that_ended_at_once + 1 : 0;
    if (groups_that_ended_at_once == 2 && next < cases.size()) {
      std::printf("nccl world=%d: %zu later case(s) not run\n", world, cases.size() - next);
      ADD_FAILURE() << "world " << world << ": two groups in a row ended in their first case";
      break;
    }
  }
  std::printf("nccl_conformance world=%d: %s%s\n", world,
              first_failure.empty() ? "passed" : "failed: ", first_failure.c_str());
  std::fflush(stdout);
}

INSTANTIATE_TEST_SUITE_P(Worlds, NcclConformance, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

}  // namespace
