// dtrun's summary when a rank hangs: its peers' all-reduce times out, each
// names the rank that never reached it in its failure record (Note [Which
// rank a timeout waited on]), and dtrun's summary names that rank as the
// likely cause, above the first failure, which is only a victim, and
// quotes the hung rank's last lines (allreduce_worker.cpp's --hang-rank). The same for the main
// job, train_pointnet2, one of whose ranks is stopped with SIGSTOP: the summary names it, where its
// flight recorder last saw it, and the table of where the ranks diverge. And the summary of a rank
// that crashed after an uncaught exception.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
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
const std::string kTrainPointNet2 = DTRAIN_TRAIN_POINTNET2_PATH;

// The pid of the child of `parent` whose environment holds RANK=`rank`, or -1.
pid_t worker_of(pid_t parent, int rank) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos || std::stoi(text.substr(close + 4)) != parent) {
      continue;  // "(comm) S PPID ...": not a child of `parent`
    }
    std::ifstream environ(entry.path() / "environ");
    const std::string env =
        std::string(1, '\0') +
        std::string((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
    const std::string wanted = std::string(1, '\0') + "RANK=" + std::to_string(rank) + '\0';
    if (env.find(wanted) != std::string::npos) {
      return std::stoi(name);
    }
  }
  return -1;
}

// A hang as a user meets it: one rank of the main job is stopped mid-run.
// The other's all-reduce times out (--dist-timeout 10), its failure record
// names the stopped rank, and dtrun's summary names it, not the rank that
// waited, with its last collective; and dtrun's watch, seeing the waiting
// rank sit in one collective (heartbeat_timeout 4), asks for
// flight-recorder dumps first.
void stop_one_rank_of_the_main_job(int stopped_rank) {
  const int waiting = 1 - stopped_rank;
  const std::string stopped_text = std::to_string(stopped_rank);
  const std::string waiting_text = std::to_string(waiting);
  TempDir dir;
  std::vector<std::string> argv{kDtrun,
                                "--standalone",
                                "--nproc-per-node",
                                "2",
                                "--max-restarts",
                                "0",
                                "--stop-timeout",
                                "5",
                                "--rdzv-conf",
                                "heartbeat_timeout=4",
                                "--log-dir",
                                dir.file("logs"),
                                kTrainPointNet2};
  for (const auto& arg :
       dtrain::testing::small_synthetic_run(dir.file("shapes"), dir.file("report.csv"))) {
    argv.push_back(arg);
  }
  argv.insert(argv.end(), {"--epochs", "200", "--batch-size", "4", "--dist-timeout", "10"});
  BackgroundProcess dtrun(argv, dir.file("dtrun.out"), {{"OMP_NUM_THREADS", "1"}});
  ASSERT_TRUE(dtrain::testing::eventually(
      [&] { return dtrun.output().find("epoch 2/200 [") != std::string::npos; }, 90s))
      << dtrun.output();
  const pid_t stopped = worker_of(dtrun.pid(), stopped_rank);
  ASSERT_GT(stopped, 0) << dtrun.output();
  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  const auto stop_time = std::chrono::steady_clock::now();
  const int status = dtrun.wait(60s);
  const auto took = std::chrono::steady_clock::now() - stop_time;
  ::kill(stopped, SIGCONT);  // should dtrun have left it stopped
  ::kill(stopped, SIGKILL);
  const std::string out = dtrun.output();
  EXPECT_EQ(status, 1) << out;
  EXPECT_LT(took, 25s) << "the timeout (10 s) plus 15 s\n" << out;
  // The stopped rank is named, by the rank that waited on it, with where it was.
  std::smatch cause;
  ASSERT_TRUE(std::regex_search(
      out, cause,
      std::regex("  likely cause: rank\\(s\\) " + stopped_text +
                 R"( never reached (.+?) \(#(\d+) on group 'default'\), in which rank\(s\) )" +
                 waiting_text + " timed out\n    rank " + stopped_text +
                 R"( was last in .+? \(#(\d+) on group 'default'\), (completed|started|scheduled) )"
                 R"(\(its flight recorder\)\n)")))
      << out;
  EXPECT_LE(std::stoll(cause[3]), std::stoll(cause[2])) << out;
  // The table: the stopped rank marked where the ranks diverge.
  EXPECT_TRUE(std::regex_search(
      out, std::regex("\n    " + stopped_text + R"( +default +\d+  .+? +\w+  <- never reached #)" +
                      cause[2].str() + " on 'default'\n")))
      << out;
  const auto first = out.find("  first failure: rank ");
  ASSERT_NE(first, std::string::npos) << out;
  EXPECT_GT(first, out.find("  likely cause: ")) << out;
  // Dumps: dtrun asked when the waiting rank sat in one collective, and it
  // dumped again on its timeout, to the store and to the round's log folder.
  EXPECT_NE(out.find("asked this node's ranks to dump their flight recorders"), std::string::npos)
      << out;
  EXPECT_NE(out.find("(dtrun asked for it)"), std::string::npos) << out;
  std::string dump;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.file("logs"))) {
    if (entry.path().filename() == "dtrain_flight_recorder_rank_" + waiting_text + ".json") {
      std::ifstream in(entry.path());
      dump.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  EXPECT_NE(dump.find("\"collective_seq_id\": " + cause[2].str() + ", "), std::string::npos)
      << dump;
  EXPECT_NE(dump.find("\"profiling_name\": \"gloo:all_reduce\""), std::string::npos) << dump;
}

TEST(DtrunHang, AStoppedRankIsNamedWithItsLastCollective) {
  stop_one_rank_of_the_main_job(1);
}

// Rank 0 hosts the job's store: stopped, it takes the store with it, so the
// waiting rank meets its peers in dtrun's store instead.
TEST(DtrunHang, AStoppedRankZeroIsNamedWithItsLastCollective) {
  stop_one_rank_of_the_main_job(0);
}

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
  // The victims said so, in their failure records: rank 0 or 1, or both
  // when both wrote theirs before dtrun read them.
  EXPECT_TRUE(line.ends_with("in which rank(s) 0 timed out") ||
              line.ends_with("in which rank(s) 1 timed out") ||
              line.ends_with("in which rank(s) 0, 1 timed out"))
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
