// train_partseg as a user runs it: bad input ends with one clear line; a
// run finds the synthetic shapes' parts, trains, and reports point
// accuracy and mIoU; a resumed run continues its report; two processes
// under dtrun learn the parts.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using dtrain::testing::expect_curves_beside;
using dtrain::testing::ProcessResult;
using dtrain::testing::read_csv;
using dtrain::testing::run_process;
using dtrain::testing::small_synthetic_run;
using dtrain::testing::TempDir;

// The report's columns after train_pointnet2's 14.
constexpr std::size_t kInstanceMiou = 14;
constexpr std::size_t kClassMiou = 15;

ProcessResult run_app(std::vector<std::string> args) {
  args.insert(args.begin(), DTRAIN_TRAIN_PARTSEG_PATH);
  return run_process(args);
}

// The whole output is one line starting "train_partseg: error:" and containing `fragment`.
void expect_one_line_error(const ProcessResult& result, int exit_code,
                           const std::string& fragment) {
  dtrain::testing::expect_one_line_error(result, exit_code, "train_partseg", fragment);
}

TEST(TrainPartSegErrors, BadFlags) {
  expect_one_line_error(run_app({"--model", "msg"}), 2, "--model");
  expect_one_line_error(run_app({"--dataset", "modelnet40"}), 2, "--dataset");
  expect_one_line_error(run_app({"--resume"}), 2, "--resume: needs --checkpoint");
}

TEST(TrainPartSegErrors, MissingShapeNetPartDirectory) {
  expect_one_line_error(run_app({"--dataset", "shapenet-part", "--data-dir", "/no/such/dir"}), 1,
                        "ShapeNet-Part HDF5 directory '/no/such/dir' does not exist");
}

TEST(TrainPartSeg, TrainsAndReportsMiou) {
  TempDir dir;
  const std::string data = dir.file("shapes");
  const std::string csv = dir.file("report.csv");
  auto args = small_synthetic_run(data, csv);
  args.insert(args.end(), {"--epochs", "2"});
  const auto result = run_app(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_curves_beside(csv, result.output);
  // The classification dataset's directory, read in ShapeNet-Part's layout.
  EXPECT_TRUE(fs::exists(fs::path(data) / "train_hdf5_file_list.txt")) << "no dataset at " << data;
  EXPECT_NE(result.output.find("3 categories, 8 parts, 48 training and 24 test clouds of 256 "
                               "points"),
            std::string::npos)
      << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 3u) << result.output;
  ASSERT_EQ(rows[0].size(), 16u);
  EXPECT_EQ(rows[0][kInstanceMiou], "instance_miou");
  EXPECT_EQ(rows[0][kClassMiou], "class_miou");
  EXPECT_EQ(rows[2][1], "48");
  for (const std::size_t column : {std::size_t{7}, kInstanceMiou, kClassMiou}) {
    const double value = std::stod(rows[2][column]);
    EXPECT_GT(value, 0.0) << rows[0][column];
    EXPECT_LE(value, 1.0) << rows[0][column];
  }
  // Every test shape comes from a balanced set, so the mean over shapes is
  // the mean over categories.
  EXPECT_NEAR(std::stod(rows[2][kInstanceMiou]), std::stod(rows[2][kClassMiou]), 1e-9);
}

// --test-limit keeps the first shapes of a shuffled test set, so the
// categories have different counts and the two means part.
TEST(TrainPartSeg, ClassMiouWeighsCategoriesEqually) {
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  auto args = small_synthetic_run(dir.file("shapes"), csv);
  args.insert(args.end(), {"--epochs", "1", "--test-limit", "7"});
  const auto result = run_app(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 2u) << result.output;
  EXPECT_NE(rows[1][kInstanceMiou], rows[1][kClassMiou]);
}

TEST(TrainPartSeg, ResumeContinuesFromTheCheckpoint) {
  TempDir dir;
  const std::string data = dir.file("shapes");
  const std::string csv = dir.file("report.csv");
  const std::string checkpoint = dir.file("partseg.pt");
  auto first = small_synthetic_run(data, csv);
  first.insert(first.end(), {"--epochs", "1", "--checkpoint", checkpoint});
  ASSERT_EQ(run_app(first).exit_code, 0);
  ASSERT_TRUE(fs::exists(checkpoint));

  auto second = small_synthetic_run(data, csv);
  second.insert(second.end(), {"--epochs", "2", "--checkpoint", checkpoint, "--resume"});
  const auto result = run_app(second);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("resumed from " + checkpoint + " after epoch 1"), std::string::npos)
      << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 3u) << "the first run's row was kept and one was added";
  EXPECT_EQ(rows[1][0], "1");
  EXPECT_EQ(rows[2][0], "2");
}

// Two processes under dtrun, DDP over the model's two-argument forward:
// 4 kinds of shape (11 parts), 80 training clouds each, 6 epochs. Guessing
// each category's commonest part would give about 65% of the points and an
// mIoU of about 0.27; runs of seeds 0-2 reached 93.6-95.2% and 0.85-0.89.
TEST(TrainPartSeg, TwoProcessesUnderDtrunLearnTheParts) {
  TempDir dir;
  const std::string csv = dir.file("report.csv");
  const auto result = run_process({DTRAIN_DTRUN_PATH,
                                   "--standalone",
                                   "--nproc-per-node",
                                   "2",
                                   DTRAIN_TRAIN_PARTSEG_PATH,
                                   "--data-dir",
                                   dir.file("shapes"),
                                   "--synthetic-classes",
                                   "4",
                                   "--synthetic-train-per-class",
                                   "80",
                                   "--synthetic-test-per-class",
                                   "10",
                                   "--num-points",
                                   "256",
                                   "--model",
                                   "ssg-lite",
                                   "--batch-size",
                                   "8",
                                   "--epochs",
                                   "6",
                                   "--threads",
                                   "1",
                                   "--csv",
                                   csv});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("on 2 process(es)"), std::string::npos) << result.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 7u) << result.output;
  EXPECT_EQ(rows[6][1], "320") << "every rank's clouds counted once";
  EXPECT_GT(std::stod(rows[6][11]), 0.0) << "no gradient communication recorded";
  EXPECT_LT(std::stod(rows[6][5]), std::stod(rows[1][5])) << "training loss did not fall";
  EXPECT_GE(std::stod(rows[6][7]), 0.85) << "final point accuracy";
  EXPECT_GE(std::stod(rows[6][kInstanceMiou]), 0.7) << "final instance mIoU";
}

}  // namespace
