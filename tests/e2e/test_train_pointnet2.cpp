// train_pointnet2 as a user runs it: bad input ends with one clear line; a
// run generates the synthetic shapes where told, trains, and writes its
// report; a resumed run continues the report from its checkpoint; two
// processes under dtrun share the data, equally or by --rank-weights; a
// worker killed mid-epoch costs only the steps since the last checkpoint,
// and a signal stops the job at a step with a checkpoint.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "background_process.h"
#include "multi_process.h"
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

// Two processes of one job whose commands differ, as two nodes' can: under
// dtrun, each runs the app through a shell that adds --epochs 2 on rank 0
// and --epochs 3 on rank 1. Both stop as the job starts, naming the flag
// and each rank's value, rather than training on until one waits for the
// other in a collective. --threads, which may differ, is not named.
TEST(TrainPointNet2Errors, ProcessesGivenDifferentFlagsNameThem) {
  TempDir dir;
  std::vector<std::string> args{DTRAIN_DTRUN_PATH,
                                "--standalone",
                                "--nproc-per-node",
                                "2",
                                "/bin/sh",
                                "-c",
                                R"(exec "$@" --epochs $((RANK + 2)) --threads $((RANK + 1)))",
                                "sh",
                                DTRAIN_TRAIN_POINTNET2_PATH};
  const auto run = small_synthetic_run(dir.file("shapes"), dir.file("report.csv"));
  args.insert(args.end(), run.begin(), run.end());
  const auto result = run_process(args);
  EXPECT_NE(result.exit_code, 0) << result.output;
  // Each rank's own line, named by its rank.
  const std::string said =
      "): error: the processes of this job were started with different settings: "
      "--epochs: \"2\" on rank 0, \"3\" on rank 1. Start every process with the same flags";
  for (const std::string rank : {"0", "1"}) {
    EXPECT_NE(result.output.find("train_pointnet2 (rank " + rank + said), std::string::npos)
        << result.output;
  }
  EXPECT_EQ(result.output.find("--threads:"), std::string::npos) << result.output;
  EXPECT_LE(read_csv(dir.file("report.csv")).size(), 1u) << "the job trained an epoch";
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

// --keep-epoch-checkpoints keeps every epoch's checkpoint as the seed keeps
// "%d.ckpt" % epoch. Each holds its epoch's state: the run resumed from the
// second epoch's file trains the third epoch as the whole run did, to the
// last digit; the last one is the checkpoint itself.
TEST(TrainPointNet2, EachEpochsCheckpointIsKept) {
  TempDir dir;
  const std::string data = dir.file("shapes");
  auto whole = small_synthetic_run(data, dir.file("whole.csv"));
  whole.insert(whole.end(), {"--epochs", "3", "--checkpoint", dir.file("ckpt/run.pt"),
                             "--keep-epoch-checkpoints"});
  const auto result = run_app(whole);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const char* kept : {"ckpt/run.epoch1.pt", "ckpt/run.epoch2.pt", "ckpt/run.epoch3.pt"}) {
    EXPECT_TRUE(fs::exists(dir.file(kept))) << kept << " is missing";
  }
  EXPECT_EQ(dtrain::testing::read_text(dir.file("ckpt/run.epoch3.pt")),
            dtrain::testing::read_text(dir.file("ckpt/run.pt")));
  EXPECT_NE(dtrain::testing::read_text(dir.file("ckpt/run.epoch2.pt")),
            dtrain::testing::read_text(dir.file("ckpt/run.pt")));

  fs::copy_file(dir.file("ckpt/run.epoch2.pt"), dir.file("from2.pt"));
  auto resumed = small_synthetic_run(data, dir.file("resumed.csv"));
  resumed.insert(resumed.end(),
                 {"--epochs", "3", "--checkpoint", dir.file("from2.pt"), "--resume"});
  const auto again = run_app(resumed);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("after epoch 2"), std::string::npos) << again.output;
  const auto expected = read_csv(dir.file("whole.csv"));
  const auto got = read_csv(dir.file("resumed.csv"));
  ASSERT_EQ(expected.size(), 4u);
  ASSERT_EQ(got.size(), 2u) << "one row, for epoch 3";
  for (size_t column : {0u, 1u, 5u, 6u, 7u}) {
    EXPECT_EQ(got[1].at(column), expected[3].at(column)) << "column " << column;
  }
  expect_one_line_error(run_app({"--keep-epoch-checkpoints"}), 2,
                        "--keep-epoch-checkpoints: needs --checkpoint");
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

// The report of small_synthetic_run over 2 epochs by two processes under
// dtrun: what the other ways of starting the same job must reproduce.
std::vector<std::vector<std::string>> report_under_dtrun(const TempDir& dir) {
  std::vector<std::string> args{DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2",
                                DTRAIN_TRAIN_POINTNET2_PATH};
  for (const auto& arg : small_synthetic_run(dir.file("shapes"), dir.file("dtrun.csv"))) {
    args.push_back(arg);
  }
  args.insert(args.end(), {"--epochs", "2"});
  const auto result = run_process(args);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  const auto rows = read_csv(dir.file("dtrun.csv"));
  EXPECT_EQ(rows.size(), 3u) << result.output;
  return rows;
}

// The clouds, losses and accuracy of every epoch, to the last digit.
void expect_same_training(const std::vector<std::vector<std::string>>& got,
                          const std::vector<std::vector<std::string>>& expected) {
  ASSERT_EQ(got.size(), expected.size()) << "only rank 0 writes the report";
  for (size_t row = 1; row < got.size(); ++row) {
    // clouds, train_loss, test_loss, test_accuracy.
    for (size_t column : {1u, 5u, 6u, 7u}) {
      EXPECT_EQ(got[row].at(column), expected[row].at(column))
          << "epoch " << row << " column " << column;
    }
  }
}

// The seed tutorial's second way: each process started by its own command,
// told where to meet (--init-method tcp://host:port, rank 0 listening
// there, or file:///path), the world size and its rank, no launcher. The
// job trains as the same two processes under dtrun do.
TEST(TrainPointNet2, ProcessesStartedByHandTrainAsUnderDtrun) {
  TempDir dir;
  const auto expected = report_under_dtrun(dir);
  ASSERT_EQ(expected.size(), 3u);
  const std::string tcp = "tcp://127.0.0.1:" + std::to_string(dtrain::testing::free_port());
  const std::string file = "file://" + dir.file("rendezvous");
  for (const std::string& init_method : {tcp, file}) {
    SCOPED_TRACE(init_method);
    const std::string csv = dir.file("by_hand.csv");
    std::vector<std::unique_ptr<BackgroundProcess>> ranks;
    for (int rank = 0; rank < 2; ++rank) {
      auto args = small_synthetic_run(dir.file("shapes"), csv);
      args.insert(args.begin(), DTRAIN_TRAIN_POINTNET2_PATH);
      args.insert(args.end(), {"--epochs", "2", "--init-method", init_method, "--world-size", "2",
                               "--rank", std::to_string(rank)});
      ranks.push_back(std::make_unique<BackgroundProcess>(
          args, dir.file("rank" + std::to_string(rank) + ".log")));
    }
    for (auto& rank : ranks) {
      ASSERT_EQ(rank->wait(180s), 0) << rank->output();
    }
    EXPECT_NE(ranks[0]->output().find("on 2 process(es)"), std::string::npos) << ranks[0]->output();
    EXPECT_NE(ranks[1]->output().find("[rank 1/"), std::string::npos)
        << "rank 1 does not name itself: " << ranks[1]->output();
    expect_same_training(read_csv(csv), expected);
    fs::remove(csv);
  }
  EXPECT_FALSE(fs::exists(dir.file("rendezvous"))) << "the last rank out deletes the file";
}

// Launched as Horovod users launch, by mpirun, with DDP over the MPI
// backend: rank and world from OpenMPI's variables, the store's address
// shared through MPI. Two ranks sum each gradient in one order whatever
// the backend, so the job trains as under dtrun over Gloo.
TEST(TrainPointNet2, UnderMpirunOnTheMpiBackendTrainsAsUnderDtrun) {
#if defined(DTRAIN_MPI_RUN) && defined(DTRAIN_MPIRUN_PATH)
  TempDir dir;
  const auto expected = report_under_dtrun(dir);
  ASSERT_EQ(expected.size(), 3u);
  std::vector<std::string> args{"/bin/sh", DTRAIN_MPI_RUN, DTRAIN_MPIRUN_PATH,
                                "2",       "mpi",          DTRAIN_TRAIN_POINTNET2_PATH};
  for (const auto& arg : small_synthetic_run(dir.file("shapes"), dir.file("mpirun.csv"))) {
    args.push_back(arg);
  }
  args.insert(args.end(), {"--epochs", "2", "--backend", "mpi"});
  const auto result = run_process(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("backend mpi"), std::string::npos) << result.output;
  expect_same_training(read_csv(dir.file("mpirun.csv")), expected);
#else
  GTEST_SKIP() << "this build has no MPI backend or no mpirun";
#endif
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

// Two processes of small_synthetic_run under dtrun, with `more` flags.
ProcessResult two_processes(const TempDir& dir, const std::string& csv,
                            std::vector<std::string> more) {
  std::vector<std::string> args{DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2",
                                DTRAIN_TRAIN_POINTNET2_PATH};
  for (const auto& arg : small_synthetic_run(dir.file("shapes"), csv)) {
    args.push_back(arg);
  }
  args.insert(args.end(), more.begin(), more.end());
  return run_process(args);
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
TEST(TrainPointNet2, RankWeightsSplitTheEpochAndTheBatch) {
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  const auto result = two_processes(dir, csv, {"--epochs", "2", "--rank-weights", "3,1"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("clouds and the global batch of 16 split among processes by "
                               "--rank-weights 3,1"),
            std::string::npos)
      << result.output;
  for (const std::string epoch : {"1/2", "2/2"}) {
    EXPECT_NE(result.output.find("[rank 0/local 0] [info] epoch " + epoch +
                                 ": clouds per process this epoch: 36, 12; batches 12, 4\n"),
              std::string::npos)
        << result.output;
  }
  EXPECT_EQ(result.output.find("[rank 1/local 1] [info] epoch 1/2: clouds per process"),
            std::string::npos)
      << "only rank 0 logs the split";
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 3u) << result.output;
  EXPECT_EQ(rows[1][1], "48");
  EXPECT_EQ(rows[2][1], "48");
}

// 37 clouds at 3:1 are 28 and 9, in batches of 12 and 4: process 0 takes 3
// steps, process 1 two (its last single cloud joins the batch before it),
// then waits in DDP's join and takes process 0's parameters and optimizer
// state. No cloud is dropped, and a run resumed after the first epoch
// shards, and ends, as the unbroken one, to the last digit.
TEST(TrainPointNet2, RankWeightsWithUnevenStepsResumeAsUnbroken) {
  TempDir dir;
  auto run = [&](const std::string& name, const std::string& epochs, bool resume) {
    std::vector<std::string> more{
        "--epochs",      epochs, "--rank-weights", "3,1",
        "--train-limit", "37",   "--checkpoint",   dir.file(name + ".pt")};
    if (resume) {
      more.push_back("--resume");
    }
    return two_processes(dir, dir.file(name + ".csv"), more);
  };
  const auto unbroken = run("unbroken", "2", false);
  ASSERT_EQ(unbroken.exit_code, 0) << unbroken.output;
  EXPECT_NE(unbroken.output.find("epoch 2/2: clouds per process this epoch: 28, 9; batches 12, 4; "
                                 "steps 3, 2 (the shorter finish inside DDP's join)"),
            std::string::npos)
      << unbroken.output;
  ASSERT_EQ(run("broken", "1", false).exit_code, 0);
  const auto resumed = run("broken", "2", true);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto expected = read_csv(dir.file("unbroken.csv"));
  const auto got = read_csv(dir.file("broken.csv"));
  ASSERT_EQ(expected.size(), 3u);
  ASSERT_EQ(got.size(), 3u) << resumed.output;
  EXPECT_EQ(expected[1][1], "37") << "every cloud once";
  EXPECT_EQ(expected[2][1], "37");
  // train_loss, test_loss, test_accuracy of the second epoch.
  for (size_t column : {5u, 6u, 7u}) {
    EXPECT_EQ(got[2].at(column), expected[2].at(column)) << "column " << column;
  }
}

// auto: the first epoch is split equally (weights 1, 1: the same numbers as
// --rank-weights 1,1), and each later one by the compute rates measured in
// the epoch before.
TEST(TrainPointNet2, RankWeightsAutoMeasuresEachEpoch) {
  TempDir dir;
  const auto result =
      two_processes(dir, dir.file("auto.csv"), {"--epochs", "2", "--rank-weights", "auto"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("epoch 1/2: clouds per process this epoch: 24, 24; batches 8, 8"),
            std::string::npos)
      << result.output;
  const size_t measured = result.output.find("--rank-weights auto: measured ");
  ASSERT_NE(measured, std::string::npos) << result.output;
  EXPECT_NE(result.output.find(" clouds/s of compute per process", measured), std::string::npos)
      << result.output;
  EXPECT_EQ(result.output.find("--rank-weights auto: measured ", measured + 1), std::string::npos)
      << "measured after the last epoch too";
  EXPECT_NE(result.output.find("epoch 2/2: clouds per process this epoch: "), std::string::npos)
      << result.output;
  const auto rows = read_csv(dir.file("auto.csv"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2][1], "48");

  const auto ones =
      two_processes(dir, dir.file("ones.csv"), {"--epochs", "1", "--rank-weights", "1,1"});
  ASSERT_EQ(ones.exit_code, 0) << ones.output;
  const auto first = read_csv(dir.file("ones.csv"));
  ASSERT_EQ(first.size(), 2u);
  for (size_t column : {1u, 5u, 6u, 7u}) {
    EXPECT_EQ(rows[1].at(column), first[1].at(column)) << "column " << column;
  }
}

// auto's measured weights are kept in the checkpoint: a resumed run with
// the same number of processes splits by the weights measured before the
// restart rather than starting again from an equal split.
TEST(TrainPointNet2, RankWeightsAutoResumesWithTheMeasuredWeights) {
  TempDir dir;
  const std::string checkpoint = dir.file("auto.pt");
  const auto first =
      two_processes(dir, dir.file("auto.csv"),
                    {"--epochs", "2", "--rank-weights", "auto", "--checkpoint", checkpoint});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::regex measured_line(R"(--rank-weights auto: measured ([0-9., ]+) clouds/s)");
  std::smatch measured;
  ASSERT_TRUE(std::regex_search(first.output, measured, measured_line)) << first.output;

  const auto resumed = two_processes(
      dir, dir.file("auto.csv"),
      {"--epochs", "3", "--rank-weights", "auto", "--checkpoint", checkpoint, "--resume"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("continuing from the weights measured before the restart, " +
                                measured[1].str()),
            std::string::npos)
      << "measured " << measured[1] << " before; " << resumed.output;
}

// The README's main job as scripts/run.sh starts it (10 kinds of shape, 100
// training clouds each, 512 points, ssg-lite, 5 epochs with the rate along
// a cosine, two processes): it learns the shapes, far above chance (10%);
// seeds 0-7 gave 81-92% on the machine that set the bound.
TEST(TrainPointNet2, MainJobLearnsTheShapes) {
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  const std::vector<std::string> run_sh_defaults = {
      "--model", "ssg-lite", "--num-points", "512", "--epochs", "5", "--lr-schedule", "cosine"};
  std::vector<std::string> command = {DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2",
                                      DTRAIN_TRAIN_POINTNET2_PATH};
  command.insert(command.end(), run_sh_defaults.begin(), run_sh_defaults.end());
  command.insert(command.end(), {"--data-dir", dir.file("shapes"), "--threads", "1", "--csv", csv});
  const auto result = run_process(command);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 6u) << result.output;
  EXPECT_EQ(rows[5][1], "1000");
  EXPECT_LT(std::stod(rows[5][5]), std::stod(rows[1][5])) << "training loss did not fall";
  EXPECT_GE(std::stod(rows[5][7]), 0.75) << "final test accuracy";
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
