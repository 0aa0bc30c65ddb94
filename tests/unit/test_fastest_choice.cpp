// The choice of the fastest kernel for a kind of input (src/fastest_choice.h),
// driven by made-up times: what is run, in which order, what is chosen and
// what is remembered. The CUDA FPS plan times its kernels through it.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "fastest_choice.h"

namespace {

using dtrain::kernels::detail::FastestChoice;

std::vector<std::string> named(std::size_t candidates) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < candidates; ++i) {
    names.push_back("kernel" + std::to_string(i));
  }
  return names;
}

// Candidate i takes times[i][k] seconds on its k-th run (the last value
// again once they run out), and every run is logged.
struct ScriptedRuns {
  explicit ScriptedRuns(std::vector<std::vector<double>> scripts)
      : times(std::move(scripts)), runs_of(times.size()) {}

  std::vector<std::vector<double>> times;
  std::vector<std::size_t> log;
  std::vector<std::size_t> runs_of;

  double operator()(std::size_t i) {
    log.push_back(i);
    const auto& script = times.at(i);
    const std::size_t k = runs_of.at(i)++;
    return script[k < script.size() ? k : script.size() - 1];
  }
};

TEST(FastestChoice, TakesTheCandidateWhoseFastestTimedRunIsShortest) {
  FastestChoice<int> choice(3);
  // Candidate 0's untimed first run is the shortest of all (it is not
  // counted); candidate 2 is slow once and fastest at its best.
  ScriptedRuns runs({{0.1, 5.0, 5.0, 5.0}, {4.0, 3.0, 3.0, 3.0}, {9.0, 9.0, 2.5, 9.0}});
  EXPECT_EQ(choice.choose(7, named(3), std::ref(runs)), 2u);
  const auto measured = choice.measured().at(7);
  EXPECT_EQ(measured.chosen, 2u);
  EXPECT_EQ(measured.seconds, (std::vector<double>{5.0, 3.0, 2.5}));
  EXPECT_EQ(measured.names, named(3));
}

TEST(FastestChoice, RunsEachOnceUntimedThenTakesTurnsForEachRound) {
  FastestChoice<int> choice(2);
  ScriptedRuns runs({{1.0}, {1.0}, {1.0}});
  choice.choose(0, named(3), std::ref(runs));
  EXPECT_EQ(runs.log, (std::vector<std::size_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
}

TEST(FastestChoice, ATieGoesToTheLowestPosition) {
  FastestChoice<int> choice(1);
  ScriptedRuns runs({{2.0}, {1.0}, {1.0}});
  EXPECT_EQ(choice.choose(0, named(3), std::ref(runs)), 1u);
  ScriptedRuns equal({{1.0}, {1.0}});
  EXPECT_EQ(choice.choose(1, named(2), std::ref(equal)), 0u);
}

TEST(FastestChoice, RemembersEachKeyAndMeasuresANewOne) {
  FastestChoice<std::tuple<int, long>> choice(1);
  ScriptedRuns runs({{2.0}, {1.0}});
  EXPECT_EQ(choice.choose({0, 8192}, named(2), std::ref(runs)), 1u);
  const std::size_t measuring_runs = runs.log.size();
  // The same key again, even with times that would now choose otherwise:
  // nothing runs, the choice stands.
  runs.times = {{0.5}, {1.0}};
  EXPECT_EQ(choice.choose({0, 8192}, named(2), std::ref(runs)), 1u);
  EXPECT_EQ(runs.log.size(), measuring_runs);
  // Another key is measured afresh.
  EXPECT_EQ(choice.choose({1, 8192}, named(2), std::ref(runs)), 0u);
  EXPECT_EQ(runs.log.size(), 2 * measuring_runs);
  EXPECT_EQ(choice.measured().size(), 2u);
  EXPECT_EQ(choice.remembered({1, 8192}), 0u);
  EXPECT_EQ(choice.remembered({2, 8192}), std::nullopt);
}

TEST(FastestChoice, ARunThatThrowsLeavesTheKeyToBeMeasuredAgain) {
  FastestChoice<int> choice(1);
  auto failing = [](std::size_t i) -> double {
    if (i == 1) {
      throw std::runtime_error("launch failed");
    }
    return 1.0;
  };
  EXPECT_THROW(choice.choose(0, named(2), failing), std::runtime_error);
  EXPECT_TRUE(choice.measured().empty());
  EXPECT_EQ(choice.remembered(0), std::nullopt);
  ScriptedRuns runs({{2.0}, {1.0}});
  EXPECT_EQ(choice.choose(0, named(2), std::ref(runs)), 1u);
}

TEST(FastestChoice, OneCallerMeasuresAKeyWhileTheOthersWait) {
  FastestChoice<int> choice(2);
  std::atomic<int> runs{0};
  auto timed = [&](std::size_t i) {
    ++runs;
    std::this_thread::yield();
    return i == 2 ? 0.5 : 1.0;
  };
  std::vector<std::thread> callers;
  std::atomic<int> chose_two{0};
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&] {
      if (choice.choose(42, named(4), timed) == 2) {
        ++chose_two;
      }
    });
  }
  for (auto& caller : callers) {
    caller.join();
  }
  EXPECT_EQ(chose_two.load(), 8);
  EXPECT_EQ(runs.load(), 4 * (1 + 2));  // one measurement: 4 candidates, 1 + 2 runs each
}

TEST(FastestChoice, ACandidateWhoseResultDiffersFromTheFirstIsNeitherTimedNorChosen) {
  FastestChoice<int> choice(2);
  // Candidate 2 would be the fastest, but its result is not the first's.
  ScriptedRuns runs({{3.0}, {2.0}, {0.5}, {1.0}});
  const std::vector<dtrain::kernels::detail::RunResult> results = {
      {4, 1, 7}, {4, 1, 7}, {4, 1, 6}, {4, 1, 7}};
  auto last_result = [&] { return results.at(runs.log.back()); };
  EXPECT_EQ(choice.choose(0, named(4), std::ref(runs), last_result), 3u);
  // Each ran once untimed; the timed rounds leave candidate 2 out.
  EXPECT_EQ(runs.log, (std::vector<std::size_t>{0, 1, 2, 3, 0, 1, 3, 0, 1, 3}));
  const auto measured = choice.measured().at(0);
  EXPECT_EQ(measured.differs, (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(measured.seconds[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ(measured.seconds[3], 1.0);
}

TEST(FastestChoice, WithoutResultsEveryCandidateIsTimed) {
  FastestChoice<int> choice(1);
  ScriptedRuns runs({{2.0}, {1.0}});
  EXPECT_EQ(choice.choose(0, named(2), std::ref(runs)), 1u);
  EXPECT_EQ(choice.measured().at(0).differs, (std::vector<bool>{false, false}));
}

TEST(FastestChoice, RefusesNoCandidatesAndNoRounds) {
  EXPECT_THROW(FastestChoice<int>(0), std::invalid_argument);
  FastestChoice<int> choice(1);
  EXPECT_THROW(choice.choose(0, named(0), [](std::size_t) { return 1.0; }), std::invalid_argument);
}

}  // namespace
