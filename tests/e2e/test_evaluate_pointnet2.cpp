// train_pointnet2's evaluation as a paper would cite it: each epoch's OA
// and mAcc in the report and the best epoch named; --eval-only of the last
// checkpoint reproducing the last epoch exactly, on one process or two;
// mAcc and the confusion matrix as scikit-learn computes them from the same
// predictions; --votes 1 as no voting, and voting that repeats; the PNGs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "pointnet2_app.h"
#include "pointnet2_trained_run.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using dtrain::testing::is_png;
using dtrain::testing::read_csv;
using dtrain::testing::TempDir;
using dtrain::testing::pointnet2::cell;
using dtrain::testing::pointnet2::evaluate;
using dtrain::testing::pointnet2::kTrainedEpochs;
using dtrain::testing::pointnet2::python_lacks;
using dtrain::testing::pointnet2::run_python;
using dtrain::testing::pointnet2::trained_run;

// The file beside a report: ("dir/eval.csv", "_eval.csv") -> "dir/eval_eval.csv".
std::string beside(const std::string& csv, const std::string& suffix) {
  const fs::path path(csv);
  return (path.parent_path() / (path.stem().string() + suffix)).string();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(EvaluatePointNet2, EachEpochReportsOverallAndMeanClassAccuracyAndTheBest) {
  const auto& run = trained_run();
  const auto rows = read_csv(run.report);
  ASSERT_EQ(rows.size(), 1u + kTrainedEpochs) << run.result.output;
  EXPECT_EQ(rows[0][7], "test_accuracy");
  EXPECT_EQ(rows[0].back(), "mean_class_accuracy");
  for (std::size_t epoch = 1; epoch <= kTrainedEpochs; ++epoch) {
    EXPECT_GE(std::stod(rows[epoch].back()), 0.0);
    EXPECT_LE(std::stod(rows[epoch].back()), 1.0);
  }
  EXPECT_NE(run.result.output.find("mean_class_accuracy"), std::string::npos);
  EXPECT_NE(run.result.output.find("best epoch by test_accuracy: "), std::string::npos)
      << run.result.output;
}

// The checkpoint after the last epoch scores the test set as that epoch
// did, to the report's last digit; mAcc and the loss too.
TEST(EvaluatePointNet2, EvalOnlyReproducesTheLastEpoch) {
  const auto& run = trained_run();
  TempDir dir;
  const std::string csv = dir.file("eval.csv");
  const auto result = evaluate(csv);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string summary = beside(csv, "_eval.csv");
  EXPECT_EQ(cell(summary, 1, "overall_accuracy"),
            cell(run.report, kTrainedEpochs, "test_accuracy"));
  EXPECT_EQ(cell(summary, 1, "mean_class_accuracy"),
            cell(run.report, kTrainedEpochs, "mean_class_accuracy"));
  EXPECT_EQ(cell(summary, 1, "test_loss"), cell(run.report, kTrainedEpochs, "test_loss"));
  EXPECT_EQ(cell(summary, 1, "epochs_done"), std::to_string(kTrainedEpochs));
  EXPECT_EQ(cell(summary, 1, "samples"), "24");
  EXPECT_FALSE(fs::exists(csv)) << "an evaluation wrote a training report";
}

// Two processes train, each rank's batch norm statistics following its own
// shard; the evaluation after the last epoch uses rank 0's, which the
// checkpoint keeps, so --eval-only of it (one process or two) reproduces
// the reported figures to the report's last digit.
TEST(EvaluatePointNet2, EvalOnlyReproducesATwoProcessRun) {
  TempDir dir;
  const std::string checkpoint = dir.file("two.pt");
  const std::string report = dir.file("two.csv");
  std::vector<std::string> train{DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2",
                                 DTRAIN_TRAIN_POINTNET2_PATH};
  for (const auto& flag : dtrain::testing::pointnet2::run_flags(dir)) {
    train.push_back(flag);
  }
  train.insert(train.end(), {"--epochs", "2", "--checkpoint", checkpoint, "--csv", report});
  const auto trained = dtrain::testing::run_process(train);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  for (const int processes : {1, 2}) {
    std::vector<std::string> eval;
    if (processes > 1) {
      eval = {DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", "2"};
    }
    eval.push_back(DTRAIN_TRAIN_POINTNET2_PATH);
    for (const auto& flag : dtrain::testing::pointnet2::run_flags(dir)) {
      eval.push_back(flag);
    }
    const std::string csv = dir.file("eval" + std::to_string(processes) + ".csv");
    eval.insert(eval.end(), {"--eval-only", "--checkpoint", checkpoint, "--csv", csv});
    const auto result = dtrain::testing::run_process(eval);
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const std::string summary = beside(csv, "_eval.csv");
    EXPECT_EQ(cell(summary, 1, "overall_accuracy"), cell(report, 2, "test_accuracy")) << processes;
    EXPECT_EQ(cell(summary, 1, "mean_class_accuracy"), cell(report, 2, "mean_class_accuracy"))
        << processes;
    EXPECT_EQ(cell(summary, 1, "test_loss"), cell(report, 2, "test_loss")) << processes;
  }
}

// Rows: true classes, named as the dataset names them; each row sums to
// its class's test clouds, which the per-class file and the predictions
// list agree on.
TEST(EvaluatePointNet2, TheConfusionMatrixRowsSumToTheClassCounts) {
  TempDir dir;
  const std::string csv = dir.file("eval.csv");
  const auto result = evaluate(csv);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto confusion = read_csv(beside(csv, "_confusion.csv"));
  const auto per_class = read_csv(beside(csv, "_per_class.csv"));
  const auto predictions = read_csv(beside(csv, "_predictions.csv"));
  ASSERT_EQ(confusion.size(), 4u);
  ASSERT_EQ(per_class.size(), 4u);
  ASSERT_EQ(predictions.size(), 25u);
  EXPECT_EQ(confusion[0],
            (std::vector<std::string>{"true\\predicted", "sphere", "cube", "cylinder"}));
  std::map<std::string, int> labelled;
  for (std::size_t i = 1; i < predictions.size(); ++i) {
    ++labelled[predictions[i][1]];
  }
  for (std::size_t c = 1; c <= 3; ++c) {
    int sum = 0;
    for (std::size_t p = 1; p <= 3; ++p) {
      sum += std::stoi(confusion[c][p]);
    }
    EXPECT_EQ(sum, 8) << confusion[c][0];
    EXPECT_EQ(per_class[c][0], confusion[c][0]);
    EXPECT_EQ(per_class[c][1], "8");
    EXPECT_EQ(per_class[c][2], confusion[c][c]) << "right predictions of " << per_class[c][0];
    EXPECT_EQ(labelled[std::to_string(c - 1)], 8);
  }
}

// scikit-learn, from the predictions file alone, finds the same OA, mAcc
// (balanced_accuracy_score) and confusion matrix.
TEST(EvaluatePointNet2, ScoresMatchScikitLearnOnTheSamePredictions) {
  if (const auto reason = python_lacks("sklearn")) {
    GTEST_SKIP() << *reason;
  }
  TempDir dir;
  const std::string csv = dir.file("eval.csv");
  const auto result = evaluate(csv, {"--votes", "3"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto python = run_python(R"(
import csv, sys
from sklearn.metrics import accuracy_score, balanced_accuracy_score, confusion_matrix
rows = list(csv.DictReader(open(sys.argv[1])))
y = [int(r["label"]) for r in rows]
p = [int(r["predicted"]) for r in rows]
print(f"{accuracy_score(y, p):.6g} {balanced_accuracy_score(y, p):.6g}")
for row in confusion_matrix(y, p, labels=[0, 1, 2]):
    print(",".join(str(v) for v in row))
)",
                                 {beside(csv, "_predictions.csv")});
  ASSERT_EQ(python.exit_code, 0) << python.output;
  const auto lines = dtrain::testing::non_empty_lines(python.output);
  ASSERT_EQ(lines.size(), 4u) << python.output;
  const std::string summary = beside(csv, "_eval.csv");
  EXPECT_EQ(lines[0],
            cell(summary, 1, "overall_accuracy") + " " + cell(summary, 1, "mean_class_accuracy"));
  const auto confusion = read_csv(beside(csv, "_confusion.csv"));
  for (std::size_t c = 1; c <= 3; ++c) {
    EXPECT_EQ(lines[c], confusion[c][1] + "," + confusion[c][2] + "," + confusion[c][3]);
  }
}

// One vote is the cloud as given: no voting. Voting draws from each
// sample's own seed, so it repeats.
TEST(EvaluatePointNet2, OneVoteIsNoVotingAndVotingRepeats) {
  TempDir dir;
  ASSERT_EQ(evaluate(dir.file("plain.csv")).exit_code, 0);
  ASSERT_EQ(evaluate(dir.file("one.csv"), {"--votes", "1"}).exit_code, 0);
  EXPECT_EQ(read_text(dir.file("plain_predictions.csv")),
            read_text(dir.file("one_predictions.csv")));
  EXPECT_EQ(cell(dir.file("plain_eval.csv"), 1, "test_loss"),
            cell(dir.file("one_eval.csv"), 1, "test_loss"));
  ASSERT_EQ(evaluate(dir.file("four.csv"), {"--votes", "4"}).exit_code, 0);
  ASSERT_EQ(evaluate(dir.file("again.csv"), {"--votes", "4"}).exit_code, 0);
  EXPECT_EQ(cell(dir.file("four_eval.csv"), 1, "votes"), "4");
  EXPECT_EQ(read_text(dir.file("four_predictions.csv")),
            read_text(dir.file("again_predictions.csv")));
  EXPECT_NE(cell(dir.file("four_eval.csv"), 1, "test_loss"),
            cell(dir.file("plain_eval.csv"), 1, "test_loss"))
      << "four votes scored as one";
}

// Two processes under dtrun each score half the set; together they find
// what one process does, sample by sample, with voting too.
TEST(EvaluatePointNet2, TwoProcessesUnderDtrunScoreAsOne) {
  TempDir dir;
  for (const std::string name : {"one", "two"}) {
    const auto result = evaluate(dir.file(name + ".csv"), {"--votes", "2"}, name == "one" ? 1 : 2);
    ASSERT_EQ(result.exit_code, 0) << result.output;
  }
  for (const std::string column : {"overall_accuracy", "mean_class_accuracy"}) {
    EXPECT_EQ(cell(dir.file("one_eval.csv"), 1, column), cell(dir.file("two_eval.csv"), 1, column))
        << column;
  }
  // The loss is a sum of floats in another order (other batches): equal to rounding.
  EXPECT_NEAR(std::stod(cell(dir.file("one_eval.csv"), 1, "test_loss")),
              std::stod(cell(dir.file("two_eval.csv"), 1, "test_loss")), 1e-5);
  EXPECT_EQ(read_text(dir.file("one_predictions.csv")), read_text(dir.file("two_predictions.csv")));
  EXPECT_EQ(read_text(dir.file("one_confusion.csv")), read_text(dir.file("two_confusion.csv")));
}

// The training curves beside the report and the confusion matrix's heat
// map beside the evaluation's files, whole PNGs, nothing half-written left.
TEST(EvaluatePointNet2, ThePicturesAreDrawn) {
  const auto& run = trained_run();
  if (const auto reason = python_lacks("matplotlib")) {
    GTEST_SKIP() << *reason;
  }
  EXPECT_TRUE(is_png(beside(run.report, ".png"))) << run.result.output;
  TempDir dir;
  const auto result = evaluate(dir.file("eval.csv"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(is_png(dir.file("eval_confusion.png"))) << result.output;
  for (const auto& entry : fs::directory_iterator(run.dir.path())) {
    EXPECT_EQ(entry.path().string().find(".tmp-"), std::string::npos) << entry.path();
  }
}

// A Python without matplotlib (here one that answers as plot_report.py
// does then): one line in the log, and the run succeeds with its CSVs.
TEST(EvaluatePointNet2, WithoutMatplotlibOneLineSaysSoAndTheRunSucceeds) {
  const auto& run = trained_run();
  TempDir dir;
  const std::string python = dir.file("python");
  std::ofstream(python) << "#!/bin/sh\necho 'matplotlib is not installed' >&2\nexit 3\n";
  fs::permissions(python, fs::perms::owner_all);
  std::vector<std::string> args{"/usr/bin/env", "DTRAIN_PYTHON=" + python,
                                DTRAIN_TRAIN_POINTNET2_PATH};
  for (const auto& flag : dtrain::testing::pointnet2::run_flags(run.dir)) {
    args.push_back(flag);
  }
  args.insert(args.end(), {"--epochs", "2", "--csv", dir.file("run.csv")});
  const auto result = dtrain::testing::run_process(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::size_t said = 0;
  for (const auto& line : dtrain::testing::non_empty_lines(result.output)) {
    said += line.find("no PNG pictures: matplotlib is not installed") != std::string::npos;
  }
  EXPECT_EQ(said, 1u) << result.output;
  EXPECT_EQ(read_csv(dir.file("run.csv")).size(), 3u);
  EXPECT_FALSE(fs::exists(dir.file("run.png")));
}

TEST(EvaluatePointNet2Errors, EvalOnlyNeedsACheckpointThatFits) {
  using dtrain::testing::pointnet2::expect_one_line_error;
  using dtrain::testing::pointnet2::run_app;
  expect_one_line_error(run_app({"--eval-only"}), 2, "--eval-only: needs --checkpoint");
  expect_one_line_error(run_app({"--votes", "0"}), 2, "--votes");
  const auto& run = trained_run();
  TempDir dir;
  // The trained checkpoint, given a model of another shape.
  std::vector<std::string> args = dtrain::testing::pointnet2::run_flags(run.dir);
  args.insert(args.end(), {"--model", "ssg", "--eval-only", "--checkpoint", run.checkpoint, "--csv",
                           dir.file("eval.csv")});
  expect_one_line_error(run_app(args), 1,
                        "checkpoint '" + run.checkpoint + "' does not fit the model");
  EXPECT_FALSE(fs::exists(dir.file("eval_eval.csv")));
}

}  // namespace
