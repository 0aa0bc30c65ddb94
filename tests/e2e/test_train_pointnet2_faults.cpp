// train_pointnet2 when things go wrong mid-run: a worker killed mid-epoch
// costs only the steps since the last checkpoint, and a signal stops the
// job at a step with a checkpoint.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "background_process.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using dtrain::testing::BackgroundProcess;
using dtrain::testing::eventually;
using dtrain::testing::read_csv;
using dtrain::testing::run_process;
using dtrain::testing::small_synthetic_run;
using dtrain::testing::TempDir;

// The processes `pid` started that still run (Linux's /proc children list).
std::vector<pid_t> children_of(pid_t pid) {
  std::ifstream list("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<pid_t> children;
  for (pid_t child = 0; list >> child;) {
    children.push_back(child);
  }
  return children;
}

// Each epoch's last row of a report (a resumed run may repeat an epoch
// whose row was written before the crash but whose checkpoint was not).
std::map<std::string, std::vector<std::string>> last_row_per_epoch(const std::string& csv) {
  std::map<std::string, std::vector<std::string>> rows;
  const auto table = read_csv(csv);
  for (size_t r = 1; r < table.size(); ++r) {
    rows[table[r].at(0)] = table[r];
  }
  return rows;
}

// True once rank 0's progress bar in `output` shows at least `step` steps
// of `epoch` ("epoch 2/4 [###   ] 5/12"): the log lines of a bar that is
// not on a terminal.
bool reached_step(const std::string& output, const std::string& epoch, int step) {
  static const std::regex bar(R"(\[rank 0/local 0\] \[info\] epoch (\d+/\d+) \[[# ]*\] (\d+)/)");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), bar);
       it != std::sregex_iterator(); ++it) {
    if ((*it)[1] == epoch && std::stoi((*it)[2]) >= step) {
      return true;
    }
  }
  return false;
}

// A job of 4 epochs under dtrun, two processes by default (12 steps of 2
// clouds each per epoch), checkpointing to `name`.pt and reporting to
// `name`.csv.
std::vector<std::string> checkpointed_job(const TempDir& dir, const std::string& name,
                                          std::vector<std::string> more,
                                          const std::string& processes = "2") {
  std::vector<std::string> args{
      DTRAIN_DTRUN_PATH,    "--standalone", "--nproc-per-node",         processes,
      "--monitor-interval", "0.1",          DTRAIN_TRAIN_POINTNET2_PATH};
  for (const auto& arg : small_synthetic_run(dir.file("shapes"), dir.file(name + ".csv"))) {
    args.push_back(arg);
  }
  args.insert(args.end(), {"--epochs", "4", "--batch-size", "2", "--checkpoint",
                           dir.file(name + ".pt"), "--resume"});
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// What dtrun's restarts and the apps' checkpoints give together: a worker
// SIGKILLed in the middle of an epoch costs the job only the steps since
// the last --checkpoint-steps checkpoint. dtrun restarts the group, every
// rank resumes at that step, and the steps after it train exactly as in an
// unbroken run (the same batches, augmentation and dropout masks, each
// drawn from its step's own seeds; the epoch's loss summed at the same
// steps), so every epoch's losses and accuracy equal the unbroken run's to
// the last digit.
TEST(TrainPointNet2, AWorkerKilledMidEpochCostsOnlyTheStepsSinceItsCheckpoint) {
  TempDir dir;
  const std::vector<std::string> every_two{"--checkpoint-steps", "2"};
  const auto unbroken = run_process(checkpointed_job(dir, "unbroken", every_two));
  ASSERT_EQ(unbroken.exit_code, 0) << unbroken.output;

  auto broken_args = checkpointed_job(dir, "broken", every_two);
  broken_args.insert(broken_args.begin() + 1, {"--max-restarts", "1"});
  BackgroundProcess broken(broken_args, dir.file("broken.log"));
  ASSERT_TRUE(eventually([&] { return reached_step(broken.output(), "2/4", 5); }, 120s))
      << broken.output();
  const std::vector<pid_t> workers = children_of(broken.pid());
  ASSERT_EQ(workers.size(), 2u) << broken.output();
  ASSERT_EQ(::kill(workers.back(), SIGKILL), 0);
  ASSERT_EQ(broken.wait(240s), 0) << broken.output();
  const std::string output = broken.output();
  EXPECT_NE(output.find("restart count 1"), std::string::npos) << "no restart: " << output;
  std::smatch resumed;
  ASSERT_TRUE(std::regex_search(
      output, resumed, std::regex(R"(resumed from \S+broken\.pt after step (\d+) of epoch 2)")))
      << output;
  EXPECT_GE(std::stoi(resumed[1]), 4) << output;

  const auto expected = last_row_per_epoch(dir.file("unbroken.csv"));
  const auto got = last_row_per_epoch(dir.file("broken.csv"));
  ASSERT_EQ(expected.size(), 4u);
  ASSERT_EQ(got.size(), 4u) << "an epoch is missing from the report: " << output;
  for (const auto& [epoch, row] : expected) {
    // train_loss, test_loss, test_accuracy.
    for (size_t column : {5u, 6u, 7u}) {
      EXPECT_EQ(got.at(epoch).at(column), row.at(column))
          << "epoch " << epoch << " column " << column;
    }
  }
}

// A scheduler's warning (Slurm's SIGTERM before its time limit, scancel,
// preemption) reaching dtrun: dtrun passes it on, the workers agree on the
// step to stop after, rank 0 writes the checkpoint there, and the job ends
// with the signal's exit code. The same command with --resume continues at
// that step and trains as an unbroken run would: the same losses and
// accuracy in every epoch. The stopped epoch's train loss is summed in
// another order, but float32 losses add up exactly in double. Resumed with
// another number of processes, it trains the rest of the stopped epoch.
TEST(TrainPointNet2, ASignalStopsTheJobAtAStepWithACheckpoint) {
  TempDir dir;
  const auto unbroken = run_process(checkpointed_job(dir, "unbroken", {}));
  ASSERT_EQ(unbroken.exit_code, 0) << unbroken.output;

  BackgroundProcess stopped(checkpointed_job(dir, "stopped", {}), dir.file("stopped.log"));
  ASSERT_TRUE(eventually([&] { return reached_step(stopped.output(), "2/4", 3); }, 120s))
      << stopped.output();
  stopped.signal(SIGTERM);
  EXPECT_EQ(stopped.wait(60s), 128 + SIGTERM) << stopped.output();
  const std::string output = stopped.output();
  std::smatch at;
  ASSERT_TRUE(std::regex_search(output, at,
                                std::regex(R"(stopped by signal 15 after step (\d+) of epoch 2)")))
      << output;
  EXPECT_EQ(last_row_per_epoch(dir.file("stopped.csv")).size(), 1u)
      << "the stopped epoch has no report row";
  // For resumes with other numbers of processes, below.
  for (const std::string copy : {"one", "three"}) {
    fs::copy_file(dir.file("stopped.pt"), dir.file(copy + ".pt"));
    fs::copy_file(dir.file("stopped.csv"), dir.file(copy + ".csv"));
  }

  const auto resumed = run_process(checkpointed_job(dir, "stopped", {}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("after step " + at[1].str() + " of epoch 2"), std::string::npos)
      << resumed.output;

  const auto expected = last_row_per_epoch(dir.file("unbroken.csv"));
  const auto got = last_row_per_epoch(dir.file("stopped.csv"));
  ASSERT_EQ(got.size(), 4u) << resumed.output;
  for (const auto& [epoch, row] : expected) {
    for (size_t column : {5u, 6u, 7u}) {  // train_loss, test_loss, test_accuracy
      EXPECT_EQ(got.at(epoch).at(column), row.at(column))
          << "epoch " << epoch << " column " << column;
    }
  }

  // Resumed with another number of processes (a node left or joined), the
  // split of the stopped epoch no longer fits: its samples that no process
  // had reached are trained, split among the new processes. Alone, that is
  // each of them once: the epoch counts every cloud exactly once.
  const int stopped_after = std::stoi(at[1]);
  const std::string left = std::to_string(48 - 2 * 2 * stopped_after);
  const auto alone = run_process(checkpointed_job(dir, "one", {}, "1"));
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  EXPECT_NE(alone.output.find("epoch 2: training the " + left +
                              " clouds not reached before the restart, split among 1 process(es)"),
            std::string::npos)
      << alone.output;
  const auto one = last_row_per_epoch(dir.file("one.csv"));
  ASSERT_EQ(one.size(), 4u) << alone.output;
  EXPECT_EQ(one.at("2").at(1), "48") << "samples of the resumed epoch";
  const auto three = run_process(checkpointed_job(dir, "three", {}, "3"));
  ASSERT_EQ(three.exit_code, 0) << three.output;
  EXPECT_NE(three.output.find("epoch 2: training the " + left +
                              " clouds not reached before the restart, split among 3 process(es)"),
            std::string::npos)
      << three.output;
  EXPECT_EQ(last_row_per_epoch(dir.file("three.csv")).size(), 4u) << three.output;
}

}  // namespace
