// dtrun's summary when a rank hangs: its peers' all-reduce times out, each
// names the rank that never reached it (Note [Which rank a timeout waited
// on]), and dtrun's summary names that rank as the likely cause, above the
// first failure, which is only a victim, and quotes the hung rank's last
// lines (allreduce_worker.cpp's --hang-rank). And the summary of a rank
// that crashed after an uncaught exception.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "background_process.h"
#include "test_support.h"

namespace {

using namespace std::chrono_literals;
using dtrain::testing::BackgroundProcess;
using dtrain::testing::TempDir;

const std::string kDtrun = DTRAIN_DTRUN_PATH;
const std::string kWorker = DTRAIN_ALLREDUCE_WORKER_PATH;

TEST(DtrunHang, TheSummaryNamesTheRankThatNeverReachedTheCollective) {
  TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  BackgroundProcess dtrun({kDtrun, "--standalone", "--nproc-per-node", "3", "--max-restarts", "0",
                           kWorker, "--out", dir.path().string(), "--steps", "3", "--step-ms", "0",
                           "--timeout-ms", "2000", "--hang-rank", "2", "--hang-step", "1"},
                          dir.file("dtrun.out"), {{"OMP_NUM_THREADS", "1"}});
  EXPECT_EQ(dtrun.wait(60s), 1);
  const std::string out = dtrun.output();
  // The victims' timeout (2 s) and grace (2 s), not rank 2's 60 s sleep.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s) << out;
  const auto cause = out.find("  likely cause: rank(s) 2 never reached all_reduce(SUM) (#");
  ASSERT_NE(cause, std::string::npos) << out;
  const auto line_end = out.find('\n', cause);
  const std::string line = out.substr(cause, line_end - cause);
  // A victim said so: rank 0 or 1, whichever failed first.
  EXPECT_TRUE(line.ends_with("in which rank(s) 0 timed out") ||
              line.ends_with("in which rank(s) 1 timed out"))
      << line;
  const auto first = out.find("  first failure: rank ", cause);
  ASSERT_NE(first, std::string::npos) << out;
  EXPECT_NE(out.substr(first, 24), "  first failure: rank 2 ") << out;
  // This node ran rank 2, so the summary quotes where it stopped.
  const auto quoted = out.find("  last lines of rank 2's output (a likely cause):\n", first);
  ASSERT_NE(quoted, std::string::npos) << out;
  EXPECT_NE(out.find("    | rank 2 stops at step 1 (--hang-rank)\n", quoted), std::string::npos)
      << out;
}

// A rank that libgloo ends (a broadcast into a tensor smaller than the
// root's) is quoted from the SDK's report of the uncaught exception, which
// says why, not only from its stack (Note [A message larger than its
// receive]).
TEST(DtrunCrash, TheSummaryQuotesWhyLibglooEndedARank) {
  TempDir dir;
  BackgroundProcess dtrun({kDtrun, "--standalone", "--nproc-per-node", "2", "--max-restarts", "0",
                           kWorker, "--out", dir.path().string(), "--short-rank", "1"},
                          dir.file("dtrun.out"), {{"OMP_NUM_THREADS", "1"}});
  EXPECT_EQ(dtrun.wait(60s), 1);
  const std::string out = dtrun.output();
  const auto first = out.find("  first failure: rank 1 (local rank 1 on node 0");
  ASSERT_NE(first, std::string::npos) << out;
  EXPECT_NE(out.find("ended with signal 6 (SIGABRT)", first), std::string::npos) << out;
  const auto report =
      out.find("    | [rank 1/local 1] terminate: uncaught gloo::EnforceNotMet: ", first);
  ASSERT_NE(report, std::string::npos) << out;
  EXPECT_NE(out.find("    | [rank 1/local 1] a Gloo message of 32 bytes arrived where this rank "
                     "had room for 16: ",
                     report),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("    | [rank 1/local 1] fatal signal 6 (SIGABRT); native stack:", report),
            std::string::npos)
      << out;
}

// A restart would hide the cause: before it, dtrun logs the rank the failed
// workers named; the next round, where nobody hangs, finishes the job.
TEST(DtrunHang, ARestartAfterAHangLogsTheRankThatNeverReachedTheCollective) {
  TempDir dir;
  BackgroundProcess dtrun({kDtrun,
                           "--standalone",
                           "--nproc-per-node",
                           "3",
                           "--max-restarts",
                           "1",
                           kWorker,
                           "--out",
                           dir.path().string(),
                           "--steps",
                           "3",
                           "--step-ms",
                           "0",
                           "--timeout-ms",
                           "2000",
                           "--hang-rank",
                           "2",
                           "--hang-step",
                           "1",
                           "--hang-restart",
                           "0"},
                          dir.file("dtrun.out"), {{"OMP_NUM_THREADS", "1"}});
  EXPECT_EQ(dtrun.wait(60s), 0);
  const std::string out = dtrun.output();
  EXPECT_NE(out.find("[warning] round 0: likely cause: rank(s) 2 never reached all_reduce(SUM) (#"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("job finished: every worker exited 0 (round 1, 1 restart"), std::string::npos)
      << out;
}

}  // namespace
