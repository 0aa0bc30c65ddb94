// train_pointnet2 as a user runs it: bad input ends with one clear line; a
// run generates the synthetic shapes where told, trains, and writes its
// report; a resumed run continues the report from its checkpoint; two
// processes under dtrun share the data; a worker killed mid-job costs only
// the epoch it was in.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "background_process.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using dtrain::testing::BackgroundProcess;
using dtrain::testing::eventually;
using dtrain::testing::ProcessResult;
using dtrain::testing::read_csv;
using dtrain::testing::run_process;
using dtrain::testing::small_synthetic_run;
using dtrain::testing::TempDir;

ProcessResult run_app(std::vector<std::string> args) {
  args.insert(args.begin(), DTRAIN_TRAIN_POINTNET2_PATH);
  return run_process(args);
}

// The whole output is one line starting "train_pointnet2: error:" and containing `fragment`.
void expect_one_line_error(const ProcessResult& result, int exit_code,
                           const std::string& fragment) {
  dtrain::testing::expect_one_line_error(result, exit_code, "train_pointnet2", fragment);
}

TEST(TrainPointNet2Errors, BadFlags) {
  expect_one_line_error(run_app({"--model", "pointnet"}), 2, "--model");
  expect_one_line_error(run_app({"--resume"}), 2, "--resume: needs --checkpoint");
  expect_one_line_error(run_app({"--synthetic-classes", "99"}), 2, "--synthetic-classes");
}

// --device cuda where no GPU is visible (hidden here on any machine) stops
// at once with what is missing; fp16 needs the GPU.
TEST(TrainPointNet2Errors, CudaWithoutAVisibleGpu) {
  expect_one_line_error(run_process({"/usr/bin/env", "CUDA_VISIBLE_DEVICES=",
                                     DTRAIN_TRAIN_POINTNET2_PATH, "--device", "cuda"}),
                        1, "--device cuda: no CUDA device is visible");
  expect_one_line_error(run_app({"--amp", "fp16"}), 2, "--amp fp16: needs --device cuda");
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
                                  "cloud(s) per epoch; PointNet++'s batch norm needs at least 2"),
            std::string::npos)
      << one_cloud.output;
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

TEST(TrainPointNet2, GeneratesTrainsAndReports) {
  TempDir dir;
  const std::string data = dir.file("shapes");
  const std::string csv = dir.file("report.csv");
  auto args = small_synthetic_run(data, csv);
  args.insert(args.end(), {"--epochs", "2"});
  const auto result = run_app(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(fs::exists(fs::path(data) / "train_files.txt")) << "no dataset at " << data;
  EXPECT_NE(result.output.find("3 classes, 48 training and 24 test clouds of 256 points"),
            std::string::npos)
      << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 3u) << result.output;
  EXPECT_EQ(rows[0][0], "epoch");
  EXPECT_EQ(rows[2][0], "2");
  EXPECT_EQ(rows[2][1], "48");
  const double accuracy = std::stod(rows[2][7]);
  EXPECT_GE(accuracy, 0.0);
  EXPECT_LE(accuracy, 1.0);
}

// 17 training clouds in batches of 8 leave a last batch of one, on which
// batch norm cannot train: it is left out instead of failing the epoch.
TEST(TrainPointNet2, LastBatchOfOneCloudIsLeftOut) {
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  auto args = small_synthetic_run(dir.file("shapes"), csv);
  args.insert(args.end(), {"--epochs", "1", "--train-limit", "17"});
  const auto result = run_app(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 2u) << result.output;
  EXPECT_EQ(rows[1][1], "16");
}

TEST(TrainPointNet2, ResumeContinuesFromTheCheckpoint) {
  TempDir dir;
  const std::string data = dir.file("shapes");
  const std::string csv = dir.file("report.csv");
  const std::string checkpoint = dir.file("ckpt/pointnet2.pt");
  auto first = small_synthetic_run(data, csv);
  first.insert(first.end(), {"--epochs", "1", "--checkpoint", checkpoint});
  ASSERT_EQ(run_app(first).exit_code, 0);
  ASSERT_TRUE(fs::exists(checkpoint));

  auto second = small_synthetic_run(data, csv);
  second.insert(second.end(), {"--epochs", "3", "--checkpoint", checkpoint, "--resume"});
  const auto result = run_app(second);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("resumed from " + checkpoint + " after epoch 1"), std::string::npos)
      << result.output;
  EXPECT_EQ(result.output.find("epoch 1/3:"), std::string::npos) << "epoch 1 ran again";
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 4u) << "the first run's row was kept and two were added";
  EXPECT_EQ(rows[1][0], "1");
  EXPECT_EQ(rows[2][0], "2");
  EXPECT_EQ(rows[3][0], "3");

  // A checkpoint of another model (one that reads normals too) is refused,
  // naming the file.
  auto other = small_synthetic_run(data, csv);
  other.insert(other.end(), {"--normals", "--checkpoint", checkpoint, "--resume"});
  const auto refused = run_app(other);
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("checkpoint '" + checkpoint + "' does not fit the model"),
            std::string::npos)
      << refused.output;
}

// The README's run command in small: two processes under dtrun, each
// generating or finding the dataset, DDP and DistributedSampler.
TEST(TrainPointNet2, TwoProcessesUnderDtrunShareTheData) {
  TempDir dir;
  std::vector<std::string> args{DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2",
                                DTRAIN_TRAIN_POINTNET2_PATH};
  for (const auto& arg : small_synthetic_run(dir.file("shapes"), dir.file("report.csv"))) {
    args.push_back(arg);
  }
  args.insert(args.end(), {"--epochs", "1"});
  const auto result = run_process(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("24 clouds per process per epoch"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("on 2 process(es)"), std::string::npos) << result.output;
  const auto rows = read_csv(dir.file("report.csv"));
  ASSERT_EQ(rows.size(), 2u) << "only rank 0 writes the report";
  EXPECT_EQ(rows[1][1], "48") << "every rank's clouds counted once";
  ASSERT_EQ(rows[0].size(), 14u);
  EXPECT_EQ(rows[0][11], "comm_s");
  EXPECT_EQ(rows[0][13], "peak_device_mb");
  EXPECT_EQ(rows[1][13], "0") << "no GPU memory on the CPU";
  // Each rank's own rate, slowest first; gradients went through all-reduce.
  EXPECT_LE(std::stod(rows[1][8]), std::stod(rows[1][9]));
  EXPECT_GT(std::stod(rows[1][8]), 0.0);
  EXPECT_GT(std::stod(rows[1][11]), 0.0) << "no communication recorded";
  const double hidden = std::stod(rows[1][12]);
  EXPECT_GE(hidden, 0.0);
  EXPECT_LE(hidden, 1.0);
  // Both ranks raced to write the dataset; one directory won, nothing else is left.
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 2u) << "expected only shapes/ and report.csv";
}

// The README's main job as scripts/run.sh starts it (10 kinds of shape, 100
// training clouds each, 512 points, ssg-lite, 5 epochs, two processes):
// it learns the shapes, far above chance (10%).
TEST(TrainPointNet2, MainJobLearnsTheShapes) {
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  const auto result = run_process({DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2",
                                   DTRAIN_TRAIN_POINTNET2_PATH, "--data-dir", dir.file("shapes"),
                                   "--model", "ssg-lite", "--num-points", "512", "--epochs", "5",
                                   "--threads", "1", "--csv", csv});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 6u) << result.output;
  EXPECT_EQ(rows[5][1], "1000");
  EXPECT_LT(std::stod(rows[5][5]), std::stod(rows[1][5])) << "training loss did not fall";
  EXPECT_GE(std::stod(rows[5][7]), 0.7) << "final test accuracy";
}

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

// What dtrun's restarts and the apps' checkpoints give together: a worker
// SIGKILLed after the first epoch's checkpoint costs the job only the epoch
// it was in. dtrun restarts the group, every rank resumes from the
// checkpoint, and the epochs after it train exactly as in an unbroken run
// (the same batches, augmentation and dropout masks, each drawn from the
// epoch's own seeds), so the last epoch's losses and accuracy equal the
// unbroken run's to the last digit.
TEST(TrainPointNet2, AWorkerKilledMidJobCostsOnlyItsEpoch) {
  TempDir dir;
  auto job = [&](const std::string& name, const std::string& max_restarts) {
    std::vector<std::string> args{
        DTRAIN_DTRUN_PATH,          "--standalone", "--nproc-per-node",   "2",
        "--max-restarts",           max_restarts,   "--monitor-interval", "0.1",
        DTRAIN_TRAIN_POINTNET2_PATH};
    for (const auto& arg : small_synthetic_run(dir.file("shapes"), dir.file(name + ".csv"))) {
      args.push_back(arg);
    }
    args.insert(args.end(), {"--epochs", "4", "--checkpoint", dir.file(name + ".pt"), "--resume"});
    return args;
  };
  const auto unbroken = run_process(job("unbroken", "0"));
  ASSERT_EQ(unbroken.exit_code, 0) << unbroken.output;

  BackgroundProcess broken(job("broken", "1"), dir.file("broken.log"));
  ASSERT_TRUE(eventually([&] { return fs::exists(dir.file("broken.pt")); }, 120s))
      << broken.output();
  const std::vector<pid_t> workers = children_of(broken.pid());
  ASSERT_EQ(workers.size(), 2u) << broken.output();
  ASSERT_EQ(::kill(workers.back(), SIGKILL), 0);
  ASSERT_EQ(broken.wait(240s), 0) << broken.output();
  const std::string output = broken.output();
  EXPECT_NE(output.find("restart count 1"), std::string::npos) << "no restart: " << output;
  EXPECT_NE(output.find("resumed from " + dir.file("broken.pt") + " after epoch"),
            std::string::npos)
      << output;

  const auto expected = last_row_per_epoch(dir.file("unbroken.csv"));
  const auto got = last_row_per_epoch(dir.file("broken.csv"));
  ASSERT_EQ(expected.size(), 4u);
  ASSERT_EQ(got.size(), 4u) << "an epoch is missing from the report: " << output;
  // train_loss, test_loss, test_accuracy of the last epoch.
  for (size_t column : {5u, 6u, 7u}) {
    EXPECT_EQ(got.at("4").at(column), expected.at("4").at(column)) << "column " << column;
  }
}

}  // namespace
