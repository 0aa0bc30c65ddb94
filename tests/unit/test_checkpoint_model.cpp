// dtrain::train checkpoints read by programs that only evaluate or predict:
// the notes that describe the model round-trip, the progress reads without
// a module, and the model alone loads with the same fit checks.
#include <gtest/gtest.h>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include "dtrain/train/checkpoint.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"
#include "test_support.h"

namespace {

using dtrain::testing::expect_error;
using dtrain::testing::TempDir;

torch::nn::Sequential described_model(int64_t outputs = 3) {
  return torch::nn::Sequential(torch::nn::Linear(4, 6), torch::nn::BatchNorm1d(6),
                               torch::nn::Linear(6, outputs));
}

TEST(CheckpointNotes, RoundTripAndReadWithoutAModule) {
  TempDir dir;
  torch::manual_seed(0);
  auto model = described_model();
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
  const std::string path = dir.file("described.pt");
  dtrain::train::save_checkpoint(
      path, *model, sgd,
      dtrain::train::TrainingProgress{
          .epochs_done = 2,
          .notes = {{"model", "Sequential"}, {"classes", "cube\nsphere\ncone"}, {"empty", ""}}});

  const auto progress = dtrain::train::read_checkpoint_progress(path);
  EXPECT_EQ(progress.epochs_done, 2);
  EXPECT_EQ(progress.notes,
            (std::map<std::string, std::string>{
                {"model", "Sequential"}, {"classes", "cube\nsphere\ncone"}, {"empty", ""}}));

  // The model alone, with no optimizer: its tensors are those saved.
  auto loaded = described_model();
  const auto with_model = dtrain::train::load_model_checkpoint(path, *loaded);
  EXPECT_EQ(with_model.notes.at("model"), "Sequential");
  const auto saved = model->parameters();
  const auto back = loaded->parameters();
  ASSERT_EQ(saved.size(), back.size());
  for (std::size_t i = 0; i < saved.size(); ++i) {
    EXPECT_TRUE(at::equal(saved[i], back[i])) << "parameter " << i;
  }

  // A file written without notes has none.
  const std::string plain = dir.file("plain.pt");
  dtrain::train::save_checkpoint(plain, *model, sgd, 1);
  EXPECT_TRUE(dtrain::train::read_checkpoint_progress(plain).notes.empty());
}

TEST(CheckpointNotes, TheModelAloneIsRefusedWhenItDoesNotFit) {
  TempDir dir;
  auto model = described_model(3);
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
  const std::string path = dir.file("three.pt");
  dtrain::train::save_checkpoint(path, *model, sgd, 1);
  auto wider = described_model(5);
  expect_error<dtrain::IOError>([&] { dtrain::train::load_model_checkpoint(path, *wider); },
                                "checkpoint '" + path + "' does not fit the model: '2.");
  expect_error<dtrain::IOError>(
      [&] { dtrain::train::load_model_checkpoint(dir.file("none.pt"), *wider); },
      "checkpoint '" + dir.file("none.pt") + "' does not exist");
  dtrain::testing::write_file(dir.file("text.pt"), {'n', 'o', 't'});
  expect_error<dtrain::IOError>(
      [&] { dtrain::train::read_checkpoint_progress(dir.file("text.pt")); },
      "cannot load checkpoint '" + dir.file("text.pt") + "'");
  expect_error<dtrain::IOError>(
      [&] { dtrain::train::read_checkpoint_progress(dir.path().string()); },
      "is a directory, not a checkpoint file");
}

}  // namespace
