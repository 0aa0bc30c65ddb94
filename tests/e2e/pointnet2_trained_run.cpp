#include "pointnet2_trained_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "dtrain/datasets/synthetic_shapes.h"

namespace dtrain::testing::pointnet2 {

namespace {

constexpr int kClasses = 3;
constexpr int kTrainPerClass = 32;
constexpr int kTestPerClass = 8;
constexpr int kPoints = 1024;

}  // namespace

std::vector<std::string> run_flags(const TempDir& dir) {
  return {"--data-dir",
          dir.file("shapes"),
          "--synthetic-classes",
          std::to_string(kClasses),
          "--synthetic-train-per-class",
          std::to_string(kTrainPerClass),
          "--synthetic-test-per-class",
          std::to_string(kTestPerClass),
          "--num-points",
          std::to_string(kPoints),
          "--model",
          "ssg-lite",
          "--batch-size",
          "4",
          "--threads",
          "1"};
}

const TrainedRun& trained_run() {
  static const std::unique_ptr<TrainedRun> run = [] {
    auto trained = std::make_unique<TrainedRun>();
    trained->checkpoint = trained->dir.file("model.pt");
    trained->report = trained->dir.file("train.csv");
    std::vector<std::string> args{DTRAIN_TRAIN_POINTNET2_PATH};
    for (const auto& flag : run_flags(trained->dir)) {
      args.push_back(flag);
    }
    args.insert(args.end(), {"--epochs", std::to_string(kTrainedEpochs), "--lr-schedule", "cosine",
                             "--checkpoint", trained->checkpoint, "--csv", trained->report});
    trained->result = run_process(args);
    return trained;
  }();
  EXPECT_EQ(run->result.exit_code, 0) << run->result.output;
  return *run;
}

ProcessResult evaluate(const std::string& csv, std::vector<std::string> more, int processes) {
  const TrainedRun& run = trained_run();
  std::vector<std::string> args;
  if (processes > 1) {
    args = {DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", std::to_string(processes)};
  }
  args.push_back(DTRAIN_TRAIN_POINTNET2_PATH);
  for (const auto& flag : run_flags(run.dir)) {
    args.push_back(flag);
  }
  args.insert(args.end(), {"--eval-only", "--checkpoint", run.checkpoint, "--csv", csv});
  args.insert(args.end(), more.begin(), more.end());
  return run_process(args);
}

datasets::LabeledClouds test_clouds() {
  const auto options = datasets::SyntheticShapesOptions()
                           .num_classes(kClasses)
                           .train_per_class(kTrainPerClass)
                           .test_per_class(kTestPerClass)
                           .points_per_cloud(kPoints);
  return datasets::generate_synthetic_shapes(datasets::Split::kTest, options);
}

std::string cell(const std::string& csv, std::size_t row, const std::string& column) {
  const auto rows = read_csv(csv);
  if (rows.size() <= row) {
    ADD_FAILURE() << csv << " has no row " << row;
    return "";
  }
  const auto& header = rows[0];
  const auto at = std::find(header.begin(), header.end(), column);
  if (at == header.end()) {
    ADD_FAILURE() << csv << " has no column " << column;
    return "";
  }
  return rows[row].at(static_cast<std::size_t>(at - header.begin()));
}

std::optional<std::string> python_lacks(const std::string& module) {
  const std::string python = DTRAIN_TEST_PYTHON;
  if (python.empty()) {
    return "the build knows no Python (DTRAIN_PYTHON is empty)";
  }
  const auto result = run_process({python, "-c", "import " + module});
  if (result.exit_code != 0) {
    return python + " cannot import " + module + " (scripts/bootstrap.sh installs it)";
  }
  return std::nullopt;
}

ProcessResult run_python(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> argv{DTRAIN_TEST_PYTHON, "-c", script};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

}  // namespace dtrain::testing::pointnet2
