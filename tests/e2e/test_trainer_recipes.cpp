// The Trainer's recipe features end to end, through trainer_recipe_probe
// (a two-head classifier without batch norm) alone and under dtrun: DDP's
// options reach DDP, accumulation equals a larger batch, clipping bounds a
// step, warmup sets each step's rate, best-k keeps exactly the best
// checkpoints, early stopping stops at the expected epoch.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "dtrain/train/state_dict.h"
#include "test_support.h"

namespace dtrain::recipe_tests {

using dtrain::testing::ProcessResult;
using dtrain::testing::read_csv;
using dtrain::testing::run_process;
using dtrain::testing::TempDir;

// The probe, alone (`processes` 1) or under dtrun, with `flags`.
ProcessResult probe(int processes, std::vector<std::string> flags) {
  std::vector<std::string> command;
  if (processes > 1) {
    command = {DTRAIN_DTRUN_PATH, "--standalone", "--nproc-per-node", std::to_string(processes)};
  }
  command.emplace_back(DTRAIN_TRAINER_RECIPE_PROBE);
  command.insert(command.end(), flags.begin(), flags.end());
  return run_process(command);
}

// A state dict file's tensors by name.
std::map<std::string, at::Tensor> tensors_in(const std::string& path) {
  const auto entries = train::read_state_dict(path);
  return {entries.begin(), entries.end()};
}

// The largest difference between two state dicts' tensors.
double max_difference(const std::string& a, const std::string& b) {
  const auto first = tensors_in(a);
  const auto second = tensors_in(b);
  EXPECT_EQ(first.size(), second.size());
  double most = 0;
  for (const auto& [name, tensor] : first) {
    const auto other = second.find(name);
    EXPECT_NE(other, second.end()) << name;
    if (other != second.end()) {
      most = std::max(most, (tensor - other->second).abs().max().item<double>());
    }
  }
  return most;
}

std::set<std::string> files_in(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

class TrainerRecipes : public ::testing::TestWithParam<int> {};

// Batches of 4 summed three at a time train as batches of 12: 50 samples
// make 4 full steps and a short last one of 2 alone; 25 a rank make 2 and
// a last of 1 under dtrun. Batches of 4 stepped one by one differ, so the
// comparison can fail.
TEST_P(TrainerRecipes, AccumulationEqualsOneBatchThatManyTimesLarger) {
  const int processes = GetParam();
  TempDir dir;
  const std::vector<std::string> common = {"--optimizer", "sgd", "--branch-every", "1"};
  auto run = [&](const std::string& name, std::vector<std::string> flags) {
    flags.insert(flags.end(), common.begin(), common.end());
    flags.insert(flags.end(), {"--export-weights", dir.file(name)});
    const ProcessResult result = probe(processes, flags);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return dir.file(name);
  };
  const auto accumulated = run("accumulated.pt", {"--batch-size", "4", "--accumulate", "3"});
  const auto large = run("large.pt", {"--batch-size", "12"});
  const auto small = run("small.pt", {"--batch-size", "4"});
  EXPECT_LE(max_difference(accumulated, large), 1e-6);
  EXPECT_GT(max_difference(small, large), 1e-4) << "batches of 4 and of 12 train alike";
}

// A head some steps skip: DDP with --find-unused-parameters trains it; without, DDP
// names the option (it would otherwise wait for gradients that never come).
TEST_P(TrainerRecipes, ABranchSomeStepsSkipTrainsWithFindUnusedParameters) {
  const int processes = GetParam();
  if (processes == 1) {
    GTEST_SKIP() << "DDP runs with several processes only";
  }
  const ProcessResult found = probe(processes, {"--find-unused-parameters"});
  EXPECT_EQ(found.exit_code, 0) << found.output;
  const ProcessResult refused = probe(processes, {});
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("find_unused_parameters"), std::string::npos) << refused.output;
}

INSTANTIATE_TEST_SUITE_P(Processes, TrainerRecipes, ::testing::Values(1, 2));

// One step of plain SGD at rate 1 moves the weights by the gradient: with
// --clip-grad-norm 0.001 by a norm of at most 0.001, without it by more.
TEST(TrainerRecipeSteps, ClippingBoundsTheStepOnlyAboveTheThreshold) {
  TempDir dir;
  auto moved = [&](std::vector<std::string> flags) {
    flags.insert(flags.end(), {"--optimizer", "sgd", "--lr", "1", "--batch-size", "50", "--epochs",
                               "1", "--initial-weights", dir.file("start.pt"), "--export-weights",
                               dir.file("end.pt")});
    const ProcessResult result = probe(1, flags);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    double squares = 0;
    const auto start = tensors_in(dir.file("start.pt"));
    for (const auto& [name, tensor] : tensors_in(dir.file("end.pt"))) {
      squares += (tensor - start.at(name)).pow(2).sum().item<double>();
    }
    return std::sqrt(squares);
  };
  const double free = moved({});
  EXPECT_GT(free, 0.01);
  EXPECT_NEAR(moved({"--clip-grad-norm", "0.001"}), 0.001, 1e-6);
  EXPECT_NEAR(moved({"--clip-grad-norm", "1000"}), free, 1e-12) << "below the threshold";
}

// Each step's rate under a cosine over 2 epochs of 13 steps, warmed up
// over the first 5 from 0.2 of it.
TEST(TrainerRecipeSteps, WarmupGivesEachStepItsRate) {
  TempDir dir;
  const ProcessResult result = probe(1, {"--cosine", "--warmup-steps", "5", "--warmup-start-factor",
                                         "0.2", "--lr-log", dir.file("lr.txt")});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ifstream log(dir.file("lr.txt"));
  std::vector<double> rates;
  for (double rate = 0; log >> rate;) {
    rates.push_back(rate);
  }
  ASSERT_EQ(rates.size(), 26u) << "2 epochs of 13 batches of 4";
  for (int step : {0, 1, 4, 5, 13, 25}) {
    const double cosine = 0.5 * (1 + std::cos(std::numbers::pi * step / 26.0));
    const double warmup = step < 5 ? 0.2 + 0.8 * step / 5.0 : 1.0;
    EXPECT_NEAR(rates[static_cast<size_t>(step)], 0.1 * cosine * warmup, 1e-9) << "step " << step;
  }
}

// Accuracies 0.2, 0.5, 0.3, 0.6, 0.4 with --keep-best 2: epochs 4 and 2
// are kept, and the checkpoint itself holds the last.
TEST(TrainerRecipeSteps, KeepBestKeepsExactlyTheBestEpochs) {
  TempDir dir;
  const ProcessResult result =
      probe(1, {"--epochs", "5", "--checkpoint", dir.file("c.pt"), "--keep-best", "2",
                "--accuracies", "0.2,0.5,0.3,0.6,0.4"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(files_in(dir.path()),
            (std::set<std::string>{"c.pt", "c.best.epoch2.pt", "c.best.epoch4.pt"}));
  // Resumed for 2 more epochs, where epoch 6 beats them all and 7 does not.
  const ProcessResult more = probe(1, {"--epochs", "7", "--checkpoint", dir.file("c.pt"),
                                       "--keep-best", "2", "--resume", "--accuracies", "0.9,0.1"});
  ASSERT_EQ(more.exit_code, 0) << more.output;
  EXPECT_EQ(files_in(dir.path()),
            (std::set<std::string>{"c.pt", "c.best.epoch4.pt", "c.best.epoch6.pt"}));
}

// Accuracies 0.5, 0.6, 0.6, 0.55, 0.7: with patience 2 the run stops after
// epoch 4 (no gain since epoch 2); with min delta 0.2, after epoch 3.
TEST(TrainerRecipeSteps, EarlyStoppingStopsAtTheExpectedEpoch) {
  TempDir dir;
  auto epochs_run = [&](std::vector<std::string> flags) {
    flags.insert(flags.end(), {"--epochs", "5", "--csv", dir.file("r.csv"), "--accuracies",
                               "0.5,0.6,0.6,0.55,0.7"});
    const ProcessResult result = probe(1, flags);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return read_csv(dir.file("r.csv")).size() - 1;
  };
  EXPECT_EQ(epochs_run({}), 5u);
  EXPECT_EQ(epochs_run({"--early-stop-patience", "2"}), 4u);
  EXPECT_EQ(epochs_run({"--early-stop-patience", "2", "--early-stop-min-delta", "0.2"}), 3u);
}

// The repository's PointNeXt recipe is a config train_pointnet2 reads: a
// short run from it writes the recipe back in its own config.
TEST(TrainerRecipeSteps, ThePointNeXtConfigTrainsPointNet2) {
  TempDir dir;
  const ProcessResult result =
      run_process({DTRAIN_TRAIN_POINTNET2_PATH, "--config", DTRAIN_POINTNEXT_CONFIG, "--model",
                   "ssg-lite", "--num-points", "512", "--epochs", "1", "--batch-size", "4",
                   "--synthetic-classes", "2", "--synthetic-train-per-class", "8",
                   "--synthetic-test-per-class", "2", "--csv", dir.file("r.csv")});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ifstream written(dir.file("r.config.yaml"));
  std::set<std::string> lines;
  for (std::string line; std::getline(written, line);) {
    lines.insert(line);
  }
  for (const char* line :
       {"optimizer: adamw", "weight-decay: 0.05", "decay-norms-biases: false", "clip-grad-norm: 1",
        "label-smoothing: 0.2", "lr-schedule: cosine", "epochs: 1", "model: ssg-lite"}) {
    EXPECT_EQ(lines.count(line), 1u) << line;
  }
}

}  // namespace dtrain::recipe_tests
