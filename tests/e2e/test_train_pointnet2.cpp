// train_pointnet2 as a user runs it: a run generates the synthetic shapes
// where told, trains, and writes its report; a resumed run continues the
// report from its checkpoint; two processes under dtrun (or started by
// hand, or by mpirun) share the data, equally or by --rank-weights.
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
#include "pointnet2_app.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using dtrain::testing::BackgroundProcess;
using dtrain::testing::read_csv;
using dtrain::testing::run_process;
using dtrain::testing::small_synthetic_run;
using dtrain::testing::TempDir;
using dtrain::testing::pointnet2::expect_one_line_error;
using dtrain::testing::pointnet2::run_app;
using dtrain::testing::pointnet2::two_processes;

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
  ASSERT_EQ(rows[0].size(), 15u);
  EXPECT_EQ(rows[0][11], "comm_s");
  EXPECT_EQ(rows[0][14], "mean_class_accuracy");
  EXPECT_EQ(rows[0][13], "peak_device_mb");
  EXPECT_EQ(rows[1][13], "0") << "no GPU memory on the CPU";
  // Each rank's own rate, slowest first; gradients went through all-reduce.
  EXPECT_LE(std::stod(rows[1][8]), std::stod(rows[1][9]));
  EXPECT_GT(std::stod(rows[1][8]), 0.0);
  EXPECT_GT(std::stod(rows[1][11]), 0.0) << "no communication recorded";
  const double hidden = std::stod(rows[1][12]);
  EXPECT_GE(hidden, 0.0);
  EXPECT_LE(hidden, 1.0);
  // Both ranks raced to write the dataset; one directory won, nothing else
  // is left but the report, its run config and its picture (none without
  // matplotlib).
  std::set<std::string> entries;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    entries.insert(entry.path().filename().string());
  }
  entries.erase("report.png");
  EXPECT_EQ(entries, (std::set<std::string>{"report.csv", "report.config.yaml", "shapes"}));
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

}  // namespace
