// What the evaluation and prediction tests of train_pointnet2 share: one
// short training run per test process (3 synthetic classes, 8 test clouds
// each, 1,024 points, ssg-lite, 8 epochs (about 75% right: the predictions
// differ from cloud to cloud), a checkpoint), its evaluation,
// the same test clouds generated here, and the Python that can check them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dtrain/datasets/point_clouds.h"
#include "test_support.h"

namespace dtrain::testing::pointnet2 {

inline constexpr int kTrainedEpochs = 8;

struct TrainedRun {
  TempDir dir;
  std::string checkpoint;  // written after the last epoch
  std::string report;      // the run's per-epoch CSV
  ProcessResult result;
};

// The run's flags of data and model, without --csv, --epochs or --checkpoint.
std::vector<std::string> run_flags(const TempDir& dir);
// Trained on the first call; the test fails where training did.
const TrainedRun& trained_run();

// train_pointnet2 --eval-only of the trained checkpoint with `more` flags,
// reporting beside `csv`; under dtrun with `processes` > 1.
ProcessResult evaluate(const std::string& csv, std::vector<std::string> more = {},
                       int processes = 1);

// The test set as train_pointnet2 reads it: labels and (N, 1024, 3) clouds.
datasets::LabeledClouds test_clouds();

// The columns of `csv`'s row `row` (1: the first after the header) by name.
std::string cell(const std::string& csv, std::size_t row, const std::string& column);

// Why the build's Python cannot run `module` (to skip a check, saying so),
// or none when it can.
std::optional<std::string> python_lacks(const std::string& module);
// Runs `script` with the build's Python and `args`.
ProcessResult run_python(const std::string& script, const std::vector<std::string>& args);

}  // namespace dtrain::testing::pointnet2
