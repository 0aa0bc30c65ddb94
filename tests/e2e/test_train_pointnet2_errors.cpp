// train_pointnet2's bad input, each ending in one clear line before any
// training: flags alone and together, a missing GPU, data that is not
// there, processes started with different flags, rank weights that leave
// a process too few clouds, and a run whose gradients diverge.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "pointnet2_app.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using dtrain::testing::read_csv;
using dtrain::testing::run_process;
using dtrain::testing::small_synthetic_run;
using dtrain::testing::TempDir;
using dtrain::testing::pointnet2::expect_one_line_error;
using dtrain::testing::pointnet2::run_app;
using dtrain::testing::pointnet2::two_processes;

TEST(TrainPointNet2Errors, BadFlags) {
  expect_one_line_error(run_app({"--model", "pointnet"}), 2, "--model");
  expect_one_line_error(run_app({"--resume"}), 2, "--resume: needs --checkpoint");
  expect_one_line_error(run_app({"--checkpoint-steps", "5"}), 2,
                        "--checkpoint-steps 5: needs --checkpoint");
  expect_one_line_error(run_app({"--synthetic-classes", "99"}), 2, "--synthetic-classes");
}

// --device cuda where no GPU is visible (hidden here on any machine) stops
// at once with what is missing, with Gloo too (which takes CUDA tensors);
// fp16 needs the GPU, and the MPI group moves only CPU tensors.
TEST(TrainPointNet2Errors, CudaWithoutAVisibleGpu) {
  for (const char* backend : {"auto", "gloo"}) {
    SCOPED_TRACE(backend);
    expect_one_line_error(
        run_process({"/usr/bin/env", "CUDA_VISIBLE_DEVICES=", DTRAIN_TRAIN_POINTNET2_PATH,
                     "--device", "cuda", "--backend", backend}),
        1, "--device cuda: no CUDA device is visible");
  }
  expect_one_line_error(run_app({"--amp", "fp16"}), 2, "--amp fp16: needs --device cuda");
  expect_one_line_error(run_app({"--device", "cuda", "--backend", "mpi"}), 2,
                        "--backend mpi: moves CPU tensors only");
}

// What would fail only after data loading or a whole epoch of training is
// named first, in one line, in plain words.
TEST(TrainPointNet2Errors, ProblemsAreNamedBeforeTraining) {
  expect_one_line_error(run_app({"--epochs", "0"}), 2, "--epochs: must be positive, got 0");
  expect_one_line_error(run_app({"--seed", "-1"}), 2, "--seed: must be a whole number >= 0");
  expect_one_line_error(run_app({"--batch-size", "1"}), 2,
                        "--batch-size 1: PointNet++'s batch norm needs at least 2 clouds");
  expect_one_line_error(run_app({"--model", "ssg", "--num-points", "256"}), 1,
                        "--num-points 256 is fewer than the 512 centres the first layer of "
                        "--model ssg samples");
  TempDir dir;
  auto args = small_synthetic_run(dir.file("shapes"), dir.file("report.csv"));
  auto with = [&](std::vector<std::string> more) {
    auto all = args;
    all.insert(all.end(), more.begin(), more.end());
    return run_app(all);
  };
  expect_one_line_error(with({"--checkpoint", dir.path().string()}), 1,
                        "checkpoint '" + dir.path().string() + "' is a directory");
  EXPECT_FALSE(fs::exists(dir.file("report.csv"))) << "the run started training";
  // (after the data summary, which names the one cloud)
  const auto one_cloud = with({"--train-limit", "1"});
  EXPECT_EQ(one_cloud.exit_code, 1) << one_cloud.output;
  EXPECT_NE(one_cloud.output.find("error: each of the 1 process(es) gets 1 of the 1 training "
                                  "clouds per epoch; the model's batch norm needs at least 2"),
            std::string::npos)
      << one_cloud.output;
}

// A learning rate that makes the run diverge: the gradients turn NaN on
// every rank at the same step (DDP's all-reduce spreads them), and every
// rank stops there with the step not taken, instead of training on with
// NaN parameters. No epoch is reported.
TEST(TrainPointNet2Errors, ADivergedRunStopsAtTheFirstNonFiniteGradients) {
  TempDir dir;
  std::vector<std::string> args{DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2",
                                DTRAIN_TRAIN_POINTNET2_PATH};
  const auto run = small_synthetic_run(dir.file("shapes"), dir.file("report.csv"));
  args.insert(args.end(), run.begin(), run.end());
  args.insert(args.end(), {"--lr", "1e10", "--epochs", "2"});
  const auto result = run_process(args);
  EXPECT_NE(result.exit_code, 0) << result.output;
  const std::regex stopped(
      R"(train_pointnet2 \(rank (\d)\): error: epoch 1, step (\d+): the gradients hold NaN or infinite values \(this process's loss: [^)]+\): training diverged, and the step was not taken; try a lower --lr)");
  std::set<std::string> ranks;
  std::set<std::string> steps;
  for (auto it = std::sregex_iterator(result.output.begin(), result.output.end(), stopped);
       it != std::sregex_iterator(); ++it) {
    ranks.insert((*it)[1].str());
    steps.insert((*it)[2].str());
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1"}))
      << "each rank's own error line: " << result.output;
  EXPECT_EQ(steps.size(), 1u) << "the ranks stopped at different steps: " << result.output;
  EXPECT_LE(read_csv(dir.file("report.csv")).size(), 1u) << "a diverged epoch was reported";
}

TEST(TrainPointNet2Errors, MissingModelNetDirectory) {
  expect_one_line_error(run_app({"--dataset", "modelnet40", "--data-dir", "/no/such/dir"}), 1,
                        "'/no/such/dir' does not exist");
}

TEST(TrainPointNet2Errors, DataDirectoryHoldingSomethingElse) {
  TempDir dir;
  fs::create_directories(dir.file("data"));
  dtrain::testing::write_file(dir.file("data/notes.txt"), {'x'});
  const auto result = run_app(small_synthetic_run(dir.file("data"), dir.file("report.csv")));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find(dir.file("data")), std::string::npos) << result.output;
  EXPECT_TRUE(fs::exists(dir.file("data/notes.txt"))) << "the user's file was touched";
}

TEST(TrainPointNet2Errors, ByHandFlagsComeTogether) {
  expect_one_line_error(run_app({"--rank", "1"}), 2,
                        "--rank: needs --world-size and --rank together");
  expect_one_line_error(run_app({"--world-size", "2"}), 2,
                        "--world-size: needs --world-size and --rank together");
  expect_one_line_error(run_app({"--world-size", "2", "--rank", "2"}), 2,
                        "--rank 2: must be below --world-size 2");
  expect_one_line_error(
      run_app({"--world-size", "2", "--rank", "0", "--init-method", "udp://somewhere"}), 2,
      "--init-method udp://somewhere: init_method 'udp://somewhere' is not env://, "
      "tcp://host:port or file:///path");
  expect_one_line_error(
      run_app({"--world-size", "2", "--rank", "0", "--init-method", "file://relative"}), 2,
      "must name an absolute path");
}

// What a worker's error line says after "train_pointnet2 (rank R): error: "
// (each rank prints the same; a worker names its rank from the start, bad
// flags included), or "".
std::string worker_error(const std::string& output) {
  static const std::regex line(R"(train_pointnet2 \(rank \d+\): error: ([^\n]*))");
  std::smatch found;
  return std::regex_search(output, found, line) ? found[1].str() : "";
}

// --rank-weights takes equal, auto or one positive number per process; a
// split that leaves a process fewer than 2 clouds of the epoch or of the
// global batch (batch norm) is refused. Each ends in one line naming the
// flag and its value, before any training.
TEST(TrainPointNet2Errors, RankWeightsAreCheckedBeforeTraining) {
  expect_one_line_error(run_app({"--rank-weights", "0,1"}), 2,
                        "--rank-weights: expected equal, auto or one positive number per process, "
                        "in rank order, such as 3,1; 0 is not positive and finite (got '0,1')");
  expect_one_line_error(run_app({"--rank-weights", "a,b"}), 2, "'a' is not a number (got 'a,b')");
  expect_one_line_error(run_app({"--rank-weights", "3,1"}), 2,
                        "--rank-weights 3,1: 2 weight(s) for 1 process(es)");
  TempDir dir;
  const auto one = two_processes(dir, dir.file("one.csv"), {"--rank-weights", "1"});
  EXPECT_NE(one.exit_code, 0) << one.output;
  EXPECT_EQ(worker_error(one.output),
            "--rank-weights 1: 1 weight(s) for 2 process(es); give one "
            "per process, in rank order (or equal, or auto); see train_pointnet2 --help")
      << one.output;
  // 48 clouds at 100:1 leave process 1 none (and none of the batch of 16).
  const auto lopsided = two_processes(dir, dir.file("lopsided.csv"), {"--rank-weights", "100,1"});
  EXPECT_NE(lopsided.exit_code, 0) << lopsided.output;
  EXPECT_EQ(worker_error(lopsided.output)
                .rfind("--rank-weights 100,1: process 1 would get 0 of the 48 "
                       "training clouds per epoch and 0 of each global batch of 16",
                       0),
            0u)
      << lopsided.output;
  EXPECT_EQ(lopsided.output.find("epoch 1/"), std::string::npos) << "it trained";
  EXPECT_LE(read_csv(dir.file("lopsided.csv")).size(), 1u) << "a report row was written";
}

// Fixed weights 3:1 split each epoch's 48 clouds 36 and 12, and the global
// batch of 16 into 12 and 4 (3 steps each); every cloud is counted once.

}  // namespace
