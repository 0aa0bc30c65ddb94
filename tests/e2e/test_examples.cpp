// The seed tutorial's programs (apps/examples) as a user runs them: started
// by hand they fork their own ranks; started as one rank each by a launcher
// (RANK/WORLD_SIZE in the environment) they join. Each must print exactly
// the seed's lines (in any interleaving across ranks) and exit 0. And the
// research-style program on the Trainer, under dtrun.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/datasets/fashion_mnist.h"
#include "multi_process.h"
#include "test_support.h"

namespace {

using dtrain::testing::non_empty_lines;
using dtrain::testing::ProcessResult;
using dtrain::testing::read_csv;
using dtrain::testing::run_process;
using dtrain::testing::TempDir;

class Examples : public ::testing::Test {
 protected:
  void SetUp() override {
    // Only the examples' own lines: no log lines, and no launcher of ours.
    ::setenv("DTRAIN_LOG_LEVEL", "warn", 1);
    for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                             "SLURM_PROCID", "MASTER_ADDR", "MASTER_PORT"}) {
      ::unsetenv(name);
    }
  }
};

std::vector<std::string> sorted(std::vector<std::string> lines) {
  std::sort(lines.begin(), lines.end());
  return lines;
}

// Runs an example that spawns its own ranks, on a free port.
ProcessResult spawn(const std::string& program, int world_size) {
  return run_process({program, "--world-size", std::to_string(world_size), "--master-port",
                      std::to_string(dtrain::testing::free_port())});
}

void expect_lines(const ProcessResult& result, std::vector<std::string> expected) {
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(sorted(non_empty_lines(result.output)), sorted(std::move(expected))) << result.output;
}

TEST_F(Examples, P2pBlocking) {
  expect_lines(spawn(DTRAIN_EXAMPLE_P2P_BLOCKING, 2), {"Rank 0 has data 1", "Rank 1 has data 1"});
}

TEST_F(Examples, P2pNonBlocking) {
  expect_lines(spawn(DTRAIN_EXAMPLE_P2P_NONBLOCKING, 2),
               {"Rank 1 started receiving", "Rank 0 started sending", "Rank 0 has data 1",
                "Rank 1 has data 1"});
}

TEST_F(Examples, P2pNonBlockingSendsBeforeRankZeroReadsItsData) {
  // Rank 0 prints "started sending" before waiting, so that line comes
  // before its "has data" line in the shared output.
  const ProcessResult result = spawn(DTRAIN_EXAMPLE_P2P_NONBLOCKING, 3);
  const auto lines = non_empty_lines(result.output);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  const auto started = std::find(lines.begin(), lines.end(), "Rank 0 started sending");
  const auto has = std::find(lines.begin(), lines.end(), "Rank 0 has data 1");
  ASSERT_NE(started, lines.end()) << result.output;
  ASSERT_NE(has, lines.end()) << result.output;
  EXPECT_LT(started, has);
  EXPECT_EQ(sorted(lines), sorted({"Rank 0 started sending", "Rank 1 started receiving",
                                   "Rank 2 started receiving", "Rank 0 has data 1",
                                   "Rank 1 has data 1", "Rank 2 has data 1"}));
}

TEST_F(Examples, AllReduceInANewGroup) {
  expect_lines(spawn(DTRAIN_EXAMPLE_ALLREDUCE_GROUP, 2),
               {"Rank 0 has data 2", "Rank 1 has data 2"});
}

TEST_F(Examples, AllReduceGroupLeavesOutRanksNotInIt) {
  expect_lines(spawn(DTRAIN_EXAMPLE_ALLREDUCE_GROUP, 3),
               {"Rank 0 has data 2", "Rank 1 has data 2", "Rank 2 is not in the group"});
}

TEST_F(Examples, EveryCollectiveOnTwoRanks) {
  expect_lines(
      spawn(DTRAIN_EXAMPLE_COLLECTIVES, 2),
      {"broadcast: Rank 0 has data 1", "broadcast: Rank 1 has data 1", "reduce: Rank 0 has data 2",
       "reduce: Rank 1 has data 1", "all_reduce: Rank 0 has data 2",
       "all_reduce: Rank 1 has data 2", "all_gather: Rank 0 has data [1, 2]",
       "all_gather: Rank 1 has data [1, 2]", "gather: Rank 0 has data [1, 2]",
       "gather: Rank 1 has data []", "scatter: Rank 0 has data 1", "scatter: Rank 1 has data 2",
       "reduce_scatter: Rank 0 has data 4", "reduce_scatter: Rank 1 has data 6",
       "all_to_all: Rank 0 has data [0, 2]", "all_to_all: Rank 1 has data [1, 3]",
       "barrier: Rank 0 has passed the barrier", "barrier: Rank 1 has passed the barrier"});
}

TEST_F(Examples, EveryCollectiveOnThreeRanks) {
  expect_lines(spawn(DTRAIN_EXAMPLE_COLLECTIVES, 3), {"broadcast: Rank 0 has data 1",
                                                      "broadcast: Rank 1 has data 1",
                                                      "broadcast: Rank 2 has data 1",
                                                      "reduce: Rank 0 has data 3",
                                                      "reduce: Rank 1 has data 1",
                                                      "reduce: Rank 2 has data 1",
                                                      "all_reduce: Rank 0 has data 3",
                                                      "all_reduce: Rank 1 has data 3",
                                                      "all_reduce: Rank 2 has data 3",
                                                      "all_gather: Rank 0 has data [1, 2, 3]",
                                                      "all_gather: Rank 1 has data [1, 2, 3]",
                                                      "all_gather: Rank 2 has data [1, 2, 3]",
                                                      "gather: Rank 0 has data [1, 2, 3]",
                                                      "gather: Rank 1 has data []",
                                                      "gather: Rank 2 has data []",
                                                      "scatter: Rank 0 has data 1",
                                                      "scatter: Rank 1 has data 2",
                                                      "scatter: Rank 2 has data 3",
                                                      "reduce_scatter: Rank 0 has data 12",
                                                      "reduce_scatter: Rank 1 has data 15",
                                                      "reduce_scatter: Rank 2 has data 18",
                                                      "all_to_all: Rank 0 has data [0, 3, 6]",
                                                      "all_to_all: Rank 1 has data [1, 4, 7]",
                                                      "all_to_all: Rank 2 has data [2, 5, 8]",
                                                      "barrier: Rank 0 has passed the barrier",
                                                      "barrier: Rank 1 has passed the barrier",
                                                      "barrier: Rank 2 has passed the barrier"});
}

TEST_F(Examples, JoinsALauncherInsteadOfSpawning) {
  // As dtrun/torchrun start it: one process per rank, RANK and WORLD_SIZE
  // set. Each process prints only its own rank's line.
  const std::string port = std::to_string(dtrain::testing::free_port());
  std::vector<ProcessResult> results(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      results[rank] = run_process({"/usr/bin/env", "RANK=" + std::to_string(rank), "WORLD_SIZE=2",
                                   "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port,
                                   DTRAIN_EXAMPLE_P2P_BLOCKING});
    });
  }
  for (auto& t : ranks) {
    t.join();
  }
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(results[rank].exit_code, 0) << results[rank].output;
    EXPECT_EQ(non_empty_lines(results[rank].output),
              std::vector<std::string>{"Rank " + std::to_string(rank) + " has data 1"})
        << results[rank].output;
  }
}

// The lines of `output` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& output, const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& line : non_empty_lines(output)) {
    if (line.rfind(prefix, 0) == 0) {
      found.push_back(line);
    }
  }
  return found;
}

// What two ranks of horovod_train print: the seed's log line once per rank
// over each rank's 512 samples (a process that forked ranks of its own
// under a launcher would print more), and agreement on the parameters.
void expect_two_horovod_ranks_in_agreement(const ProcessResult& result) {
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(lines_starting(result.output, "Train Epoch: 0 [0/512]\tLoss: ").size(), 2u)
      << result.output;
  EXPECT_EQ(
      sorted(lines_starting(result.output, "Rank ")),
      sorted({"Rank 0 parameters agree across ranks", "Rank 1 parameters agree across ranks"}))
      << result.output;
}

TEST_F(Examples, HorovodTrainingKeepsRanksInAgreement) {
  if (!dtrain::datasets::fashion_mnist_installed()) {
    GTEST_SKIP() << "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)";
  }
  const ProcessResult result =
      run_process({DTRAIN_EXAMPLE_HOROVOD_TRAIN, "--world-size", "2", "--train-limit", "1024",
                   "--master-port", std::to_string(dtrain::testing::free_port())});
  expect_two_horovod_ranks_in_agreement(result);
}

// As Horovod programs are launched (horovodrun is mpirun underneath), on
// the MPI backend: every rank ends with the same parameters.
TEST_F(Examples, HorovodTrainingUnderMpirun) {
#if defined(DTRAIN_MPI_RUN) && defined(DTRAIN_MPIRUN_PATH)
  if (!dtrain::datasets::fashion_mnist_installed()) {
    GTEST_SKIP() << "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)";
  }
  const ProcessResult result =
      run_process({"/bin/sh", DTRAIN_MPI_RUN, DTRAIN_MPIRUN_PATH, "2", "mpi",
                   DTRAIN_EXAMPLE_HOROVOD_TRAIN, "--backend", "mpi", "--train-limit", "1024"});
  expect_two_horovod_ranks_in_agreement(result);
#else
  GTEST_SKIP() << "this build has no MPI backend or no mpirun";
#endif
}

// apex's four opt levels under DDP: each lowers the loss over two epochs,
// names its precision, and leaves every rank with the same weights (at
// O2 the float32 master copies).
TEST_F(Examples, AmpDdpTrainingLowersTheLossAtEveryOptLevel) {
  if (!dtrain::datasets::fashion_mnist_installed()) {
    GTEST_SKIP() << "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)";
  }
  const std::map<std::string, std::string> levels = {
      {"O0", "(O0: fp32, 2 ranks)"},
      {"O1", "(O1: bf16 autocast, 2 ranks)"},
      {"O2", "(O2: bf16 model, fp32 master weights, 2 ranks)"},
      {"O3", "(O3: bf16 model and update, 2 ranks)"}};
  for (const auto& [level, description] : levels) {
    SCOPED_TRACE(level);
    const ProcessResult result = run_process(
        {DTRAIN_EXAMPLE_AMP_DDP_TRAIN, "--world-size", "2", "--train-limit", "2048", "--opt-level",
         level, "--master-port", std::to_string(dtrain::testing::free_port())});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    const auto epoch0 = lines_starting(result.output, "Rank 0 epoch 0 loss ");
    const auto epoch1 = lines_starting(result.output, "Rank 0 epoch 1 loss ");
    ASSERT_EQ(epoch0.size(), 1u) << result.output;
    ASSERT_EQ(epoch1.size(), 1u) << result.output;
    const auto loss_of = [](const std::string& line) {
      return std::stod(line.substr(std::string("Rank 0 epoch 0 loss ").size()));
    };
    EXPECT_LT(loss_of(epoch1[0]), loss_of(epoch0[0])) << result.output;
    EXPECT_NE(epoch1[0].find(description), std::string::npos) << epoch1[0];
    EXPECT_EQ(sorted(lines_starting(result.output, "Rank 0 parameters")),
              std::vector<std::string>{"Rank 0 parameters agree across ranks"})
        << result.output;
  }
}

// The README's smallest DDP program, launched as the README says: two
// processes under dtrun, rank 0 printing a loss that falls.
TEST_F(Examples, DdpMinimalUnderDtrunLowersTheLoss) {
  const ProcessResult result = run_process(
      {DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2", DTRAIN_EXAMPLE_DDP_MINIMAL});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::vector<double> losses;
  for (const auto& line : non_empty_lines(result.output)) {
    double loss = 0;
    int step = 0;
    if (std::sscanf(line.c_str(), "step %d: loss %lf", &step, &loss) == 2) {
      losses.push_back(loss);
    }
  }
  ASSERT_EQ(losses.size(), 5u) << "one line every 25 steps, from rank 0 only:\n" << result.output;
  EXPECT_LT(losses.back(), 0.1 * losses.front()) << result.output;
}

// Research code on the Trainer (train_tiny_pointnet) as its header says to
// run it: two processes under dtrun, on the CPU. It learns the four shapes
// (the training loss falls to well below its first epoch's, the test
// accuracy ends far above chance, 25%; 99% on the machine that set the
// bound), and rank 0 writes the Trainer's report: one row an epoch, every
// rank's clouds counted once, gradients all-reduced.
TEST_F(Examples, TinyPointNetLearnsUnderDtrunWithTheTrainersReport) {
  TempDir dir;
  const std::string csv = dir.file("tiny.csv");
  const ProcessResult result = run_process({DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node",
                                            "2", DTRAIN_EXAMPLE_TRAIN_TINY_POINTNET, csv});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 7u) << "a header and 6 epochs: " << result.output;
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"epoch", "samples", "epoch_time_s", "samples_per_s",
                                      "peak_rss_mb", "train_loss", "test_loss", "test_accuracy",
                                      "rank_samples_per_s_min", "rank_samples_per_s_max", "step_ms",
                                      "comm_s", "comm_hidden_fraction", "peak_device_mb"}));
  for (size_t epoch = 1; epoch < rows.size(); ++epoch) {
    EXPECT_EQ(rows[epoch][0], std::to_string(epoch));
    EXPECT_EQ(rows[epoch][1], "400") << "4 shapes of 100 training clouds, each once";
    EXPECT_GT(std::stod(rows[epoch][11]), 0.0) << "epoch " << epoch << ": no all-reduce";
  }
  EXPECT_LT(std::stod(rows[6][5]), 0.6 * std::stod(rows[1][5])) << "the training loss";
  EXPECT_GE(std::stod(rows[6][7]), 0.8) << "the final test accuracy";
}

TEST_F(Examples, BadFlagIsOneLineAndExitTwo) {
  const ProcessResult result = run_process({DTRAIN_EXAMPLE_COLLECTIVES, "--world-size", "0"});
  EXPECT_EQ(result.exit_code, 2) << result.output;
  const auto lines = non_empty_lines(result.output);
  ASSERT_EQ(lines.size(), 1u) << result.output;
  EXPECT_NE(lines[0].find("--world-size"), std::string::npos) << lines[0];
}

TEST_F(Examples, AllReduceGroupNeedsTwoRanks) {
  const ProcessResult result = spawn(DTRAIN_EXAMPLE_ALLREDUCE_GROUP, 1);
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("at least 2 ranks"), std::string::npos) << result.output;
}

}  // namespace
