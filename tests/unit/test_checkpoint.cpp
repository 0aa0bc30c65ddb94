// dtrain::train checkpoints: a round trip restores weights, buffers,
// optimizer state and the epoch; a failed save keeps the old file; bad
// files and mismatched models raise, naming the path.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include "dtrain/train/checkpoint.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"
#include "test_support.h"

namespace {

using dtrain::testing::expect_error;

namespace fs = std::filesystem;
using dtrain::testing::TempDir;
using dtrain::train::load_checkpoint;
using dtrain::train::save_checkpoint;

torch::nn::Sequential make_model(int64_t hidden = 8) {
  return torch::nn::Sequential(torch::nn::Linear(4, hidden), torch::nn::BatchNorm1d(hidden),
                               torch::nn::Linear(hidden, 2));
}

// One Adam step, so the optimizer has state and batch norm has statistics.
void step(torch::nn::Sequential& model, torch::optim::Adam& optimizer) {
  optimizer.zero_grad();
  model->forward(torch::randn({16, 4})).square().sum().backward();
  optimizer.step();
}

TEST(Checkpoint, RoundTripRestoresTrainingState) {
  TempDir dir;
  const std::string path = (fs::path(dir.path()) / "sub" / "ckpt.pt").string();
  torch::manual_seed(0);
  auto model = make_model();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  step(model, optimizer);
  save_checkpoint(path, *model, optimizer, 7);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(
      std::distance(fs::directory_iterator(fs::path(path).parent_path()), fs::directory_iterator()),
      1)
      << "a temporary file was left beside the checkpoint";

  auto restored = make_model();
  torch::optim::Adam restored_optimizer(restored->parameters(), torch::optim::AdamOptions(1e-2));
  EXPECT_EQ(load_checkpoint(path, *restored, restored_optimizer), 7);
  const auto original_buffers = model->buffers();
  const auto restored_buffers = restored->buffers();
  ASSERT_EQ(original_buffers.size(), restored_buffers.size());
  for (size_t i = 0; i < original_buffers.size(); ++i) {
    EXPECT_TRUE(at::equal(original_buffers[i], restored_buffers[i])) << "buffer " << i;
  }
  // The same next step from both: equal weights and equal Adam moments.
  torch::manual_seed(1);
  step(model, optimizer);
  torch::manual_seed(1);
  step(restored, restored_optimizer);
  const auto a = model->parameters();
  const auto b = restored->parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(at::equal(a[i], b[i])) << "parameter " << i;
  }
}

// fp16 training's loss scale survives a restart: a scaler that backed off
// and counted clean steps comes back as it was; a checkpoint without one
// leaves the scaler at its own state.
TEST(Checkpoint, GradScalerStateRoundTrips) {
  TempDir dir;
  const std::string path = dir.file("ckpt.pt");
  torch::manual_seed(0);
  auto model = make_model();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  dtrain::amp::GradScaler scaler(dtrain::amp::GradScalerOptions().init_scale(1024));
  for (int i = 0; i < 3; ++i) {
    optimizer.zero_grad();
    scaler.scale(model->forward(torch::randn({16, 4})).square().sum()).backward();
    scaler.step(optimizer);
    scaler.update();
  }
  scaler.update(256.0);  // as after an overflow
  save_checkpoint(path, *model, optimizer, 2, &scaler);

  auto restored = make_model();
  torch::optim::Adam restored_optimizer(restored->parameters(), torch::optim::AdamOptions(1e-2));
  dtrain::amp::GradScaler restored_scaler;
  ASSERT_EQ(restored_scaler.get_scale(), 65536.0);
  EXPECT_EQ(load_checkpoint(path, *restored, restored_optimizer, &restored_scaler), 2);
  EXPECT_EQ(restored_scaler.get_scale(), 256.0);
  EXPECT_EQ(restored_scaler.growth_tracker(), scaler.growth_tracker());

  const std::string without = dir.file("fp32.pt");
  save_checkpoint(without, *model, optimizer, 2);
  dtrain::amp::GradScaler untouched;
  EXPECT_EQ(load_checkpoint(without, *restored, restored_optimizer, &untouched), 2);
  EXPECT_EQ(untouched.get_scale(), 65536.0);
}

// A checkpoint taken mid-epoch keeps its step count and the app's own
// values, each with its dtype and shape; an epoch-end checkpoint reads back
// as step 0 with nothing extra.
TEST(Checkpoint, ProgressRoundTripsWithStepsAndExtraValues) {
  TempDir dir;
  torch::manual_seed(0);
  auto model = make_model();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  step(model, optimizer);
  const dtrain::train::TrainingProgress progress{
      .epochs_done = 3,
      .steps_done = 5,
      .extra = {{"sharding/weights", at::tensor({3.0, 1.5}, at::kDouble)},
                {"epoch/samples", at::tensor({40}, at::kLong)},
                {"epoch/loss", at::rand({2, 2})}}};
  const std::string path = dir.file("mid.pt");
  save_checkpoint(path, *model, optimizer, progress);

  auto restored = make_model();
  torch::optim::Adam restored_optimizer(restored->parameters(), torch::optim::AdamOptions(1e-2));
  const auto loaded = dtrain::train::load_checkpoint_progress(path, *restored, restored_optimizer);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->epochs_done, 3);
  EXPECT_EQ(loaded->steps_done, 5);
  ASSERT_EQ(loaded->extra.size(), progress.extra.size());
  for (const auto& [name, value] : progress.extra) {
    ASSERT_TRUE(loaded->extra.contains(name)) << name;
    const at::Tensor& back = loaded->extra.at(name);
    EXPECT_EQ(back.scalar_type(), value.scalar_type()) << name;
    EXPECT_TRUE(at::equal(back, value)) << name;
  }
  EXPECT_EQ(load_checkpoint(path, *restored, restored_optimizer), 3);

  const std::string at_end = dir.file("end.pt");
  save_checkpoint(at_end, *model, optimizer, 4);
  const auto end = dtrain::train::load_checkpoint_progress(at_end, *restored, restored_optimizer);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->epochs_done, 4);
  EXPECT_EQ(end->steps_done, 0);
  EXPECT_TRUE(end->extra.empty());
}

TEST(Checkpoint, BadProgressIsNamedAndWritesNothing) {
  TempDir dir;
  auto model = make_model();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  const std::string path = dir.file("bad.pt");
  expect_error<dtrain::Error>(
      [&] {
        save_checkpoint(path, *model, optimizer,
                        dtrain::train::TrainingProgress{.epochs_done = 1, .steps_done = -2});
      },
      "steps_done is -2");
  expect_error<dtrain::Error>(
      [&] {
        save_checkpoint(path, *model, optimizer,
                        dtrain::train::TrainingProgress{.epochs_done = 1, .extra = {{"w", {}}}});
      },
      "extra value 'w' holds no tensor");
  EXPECT_FALSE(fs::exists(path));
}

// CheckpointWriter: what is written is the state at save(), whatever the
// steps after it change; saves in a row leave the last; a failed write is
// thrown by the next call, and the previous checkpoint stays.
TEST(CheckpointWriter, WritesTheStateAtSaveInTheBackground) {
  TempDir dir;
  const std::string path = dir.file("async.pt");
  torch::manual_seed(0);
  auto model = make_model();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  step(model, optimizer);
  dtrain::train::CheckpointWriter writer;
  writer.save(path, *model, optimizer, dtrain::train::TrainingProgress{.epochs_done = 1});
  for (int i = 0; i < 3; ++i) {
    step(model, optimizer);  // while the file may still be written
  }
  std::vector<at::Tensor> at_save;
  for (const auto& parameter : model->parameters()) {
    at_save.push_back(parameter.detach().clone());
  }
  writer.save(path, *model, optimizer,
              dtrain::train::TrainingProgress{.epochs_done = 1, .steps_done = 3});
  {
    torch::NoGradGuard no_grad;
    for (auto& parameter : model->parameters()) {
      parameter.fill_(7);  // at once, while the second write runs
    }
  }
  writer.wait();
  auto restored = make_model();
  torch::optim::Adam restored_optimizer(restored->parameters(), torch::optim::AdamOptions(1e-2));
  const auto progress =
      dtrain::train::load_checkpoint_progress(path, *restored, restored_optimizer);
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ(progress->steps_done, 3) << "the second save is the one on disk";
  const auto parameters = restored->parameters();
  for (size_t i = 0; i < parameters.size(); ++i) {
    EXPECT_TRUE(at::equal(parameters[i], at_save[i]))
        << "parameter " << i << " is not as it was at save()";
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1)
      << "a temporary file was left behind";
}

TEST(CheckpointWriter, AFailedWriteIsThrownByTheNextCallAndKeepsTheOldFile) {
  TempDir dir;
  const std::string path = dir.file("async.pt");
  auto model = make_model();
  torch::optim::Adam optimizer(model->parameters());
  dtrain::train::CheckpointWriter writer;
  writer.save(path, *model, optimizer, dtrain::train::TrainingProgress{.epochs_done = 1});
  writer.wait();
  // A directory where the temporary file goes: the write fails.
  const fs::path in_the_way = path + ".tmp-" + std::to_string(::getpid());
  fs::create_directories(in_the_way / "inside");
  writer.save(path, *model, optimizer, dtrain::train::TrainingProgress{.epochs_done = 2});
  expect_error<dtrain::IOError>([&] { writer.wait(); }, "cannot write checkpoint '" + path + "'");
  writer.wait();  // reported once
  auto reloaded = make_model();
  torch::optim::Adam reloaded_optimizer(reloaded->parameters());
  EXPECT_EQ(load_checkpoint(path, *reloaded, reloaded_optimizer), 1);
  // The failure of a write also surfaces at the next save.
  writer.save(path, *model, optimizer, dtrain::train::TrainingProgress{.epochs_done = 3});
  expect_error<dtrain::IOError>(
      [&] {
        writer.save(path, *model, optimizer, dtrain::train::TrainingProgress{.epochs_done = 4});
      },
      "cannot write checkpoint '" + path + "'");
  fs::remove_all(in_the_way);
  writer.save(path, *model, optimizer, dtrain::train::TrainingProgress{.epochs_done = 5});
  writer.wait();
  EXPECT_EQ(load_checkpoint(path, *reloaded, reloaded_optimizer), 5);
}

TEST(Checkpoint, MissingFileIsNoCheckpoint) {
  TempDir dir;
  auto model = make_model();
  torch::optim::Adam optimizer(model->parameters());
  EXPECT_EQ(load_checkpoint((fs::path(dir.path()) / "none.pt").string(), *model, optimizer),
            std::nullopt);
}

TEST(Checkpoint, FailedSaveKeepsThePreviousFile) {
  TempDir dir;
  const std::string path = (fs::path(dir.path()) / "ckpt.pt").string();
  auto model = make_model();
  torch::optim::Adam optimizer(model->parameters());
  save_checkpoint(path, *model, optimizer, 1);
  const auto size_before = fs::file_size(path);
  // A save to the same path that cannot write its temporary file (a
  // directory stands in its place) raises and leaves the old checkpoint.
  const fs::path in_the_way = path + ".tmp-" + std::to_string(::getpid());
  fs::create_directories(in_the_way / "inside");
  expect_error<dtrain::IOError>([&] { save_checkpoint(path, *model, optimizer, 2); },
                                "cannot write checkpoint '" + path + "'");
  fs::remove_all(in_the_way);
  auto reloaded = make_model();
  torch::optim::Adam reloaded_optimizer(reloaded->parameters());
  EXPECT_EQ(load_checkpoint(path, *reloaded, reloaded_optimizer), 1);
  // The rename cannot replace a directory: the temporary is removed and the
  // error names the path.
  const std::string blocked = (fs::path(dir.path()) / "blocked").string();
  fs::create_directories(fs::path(blocked) / "inside");
  expect_error<dtrain::IOError>([&] { save_checkpoint(blocked, *model, optimizer, 2); },
                                "cannot move checkpoint into place at '" + blocked + "'");
  EXPECT_EQ(fs::file_size(path), size_before);
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 2u) << "a temporary file was left behind";
}

TEST(Checkpoint, CorruptOrMismatchedFilesRaiseNamingThePath) {
  TempDir dir;
  const std::string garbage = (fs::path(dir.path()) / "garbage.pt").string();
  std::ofstream(garbage) << "not a checkpoint";
  auto model = make_model();
  torch::optim::Adam optimizer(model->parameters());
  expect_error<dtrain::IOError>([&] { load_checkpoint(garbage, *model, optimizer); },
                                "cannot load checkpoint '" + garbage + "'");

  const std::string wider = (fs::path(dir.path()) / "wider.pt").string();
  auto wide_model = make_model(16);
  torch::optim::Adam wide_optimizer(wide_model->parameters());
  save_checkpoint(wider, *wide_model, wide_optimizer, 3);
  expect_error<dtrain::IOError>([&] { load_checkpoint(wider, *model, optimizer); },
                                "checkpoint '" + wider +
                                    "' does not fit the model: '0.bias' has shape [16] in the "
                                    "checkpoint, [8] in the model");
}

// A checkpoint of a larger model (one more layer) does not fit, though
// every tensor the smaller model asks for is there.
TEST(Checkpoint, TensorsTheModelLacksRaise) {
  TempDir dir;
  const std::string path = (fs::path(dir.path()) / "deeper.pt").string();
  auto deeper = make_model();
  deeper->push_back(torch::nn::BatchNorm1d(2));  // buffers and parameters at index 3
  torch::optim::Adam deeper_optimizer(deeper->parameters());
  save_checkpoint(path, *deeper, deeper_optimizer, 1);
  auto model = make_model();
  torch::optim::Adam optimizer(model->parameters());
  expect_error<dtrain::IOError>([&] { load_checkpoint(path, *model, optimizer); },
                                "' does not fit the model: it holds what the model does not have: "
                                "'3'");
  // The other way round: the model has a layer the checkpoint lacks.
  const std::string shallow = (fs::path(dir.path()) / "shallow.pt").string();
  save_checkpoint(shallow, *model, optimizer, 1);
  expect_error<dtrain::IOError>([&] { load_checkpoint(shallow, *deeper, deeper_optimizer); },
                                "' does not fit the model: it lacks what the model has: '3'");
  // Inside a layer the model has: a bias where the model's layer has none.
  auto without_bias =
      torch::nn::Sequential(torch::nn::Linear(torch::nn::LinearOptions(4, 8).bias(false)),
                            torch::nn::BatchNorm1d(8), torch::nn::Linear(8, 2));
  torch::optim::Adam without_bias_optimizer(without_bias->parameters());
  const std::string biased = (fs::path(dir.path()) / "biased.pt").string();
  save_checkpoint(biased, *model, optimizer, 1);
  expect_error<dtrain::IOError>(
      [&] { load_checkpoint(biased, *without_bias, without_bias_optimizer); },
      "it holds what the model does not have: '0.bias'");
  const std::string unbiased = (fs::path(dir.path()) / "unbiased.pt").string();
  save_checkpoint(unbiased, *without_bias, without_bias_optimizer, 1);
  expect_error<dtrain::IOError>([&] { load_checkpoint(unbiased, *model, optimizer); },
                                "it lacks what the model has: '0.bias'");
  // The model's own layout loads: nothing in it counts as unexpected.
  auto same = make_model();
  torch::optim::Adam same_optimizer(same->parameters());
  const std::string own = (fs::path(dir.path()) / "own.pt").string();
  save_checkpoint(own, *model, optimizer, 4);
  EXPECT_EQ(load_checkpoint(own, *same, same_optimizer), 4);
}

TEST(Checkpoint, AnotherOptimizersStateRaisesNamingBoth) {
  TempDir dir;
  const std::string path = (fs::path(dir.path()) / "adam.pt").string();
  auto model = make_model();
  torch::optim::Adam adam(model->parameters());
  step(model, adam);
  save_checkpoint(path, *model, adam, 1);
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  expect_error<dtrain::IOError>([&] { load_checkpoint(path, *model, sgd); },
                                "holds the state of a torch::optim::Adam optimizer; this run's "
                                "optimizer is a torch::optim::SGD");
}

// A path save_checkpoint could not write is named before any training.
TEST(Checkpoint, CheckPathNamesWhatCannotBeWritten) {
  TempDir dir;
  dtrain::train::check_checkpoint_path(
      (fs::path(dir.path()) / "new" / "dir" / "model.pt").string());
  EXPECT_TRUE(fs::is_directory(fs::path(dir.path()) / "new" / "dir")) << "the directory is made";
  expect_error<dtrain::IOError>([&] { dtrain::train::check_checkpoint_path(dir.path().string()); },
                                "checkpoint '" + dir.path().string() + "' is a directory");
  const fs::path file_in_the_way = fs::path(dir.path()) / "file";
  std::ofstream(file_in_the_way) << "x";
  expect_error<dtrain::IOError>(
      [&] { dtrain::train::check_checkpoint_path((file_in_the_way / "model.pt").string()); },
      "cannot create directory '" + file_in_the_way.string() + "'");
  // Loading a directory says so too (not a zip reader's complaint).
  auto model = make_model();
  torch::optim::Adam optimizer(model->parameters());
  expect_error<dtrain::IOError>([&] { load_checkpoint(dir.path().string(), *model, optimizer); },
                                "is a directory, not a checkpoint file");
}

// Only a missing file means "no checkpoint yet": a path that cannot be
// looked at must not restart training and have its checkpoint overwritten.
TEST(Checkpoint, APathThatCannotBeLookedAtRaises) {
  TempDir dir;
  const fs::path loop = fs::path(dir.path()) / "loop.pt";
  fs::create_symlink(loop, loop);
  auto model = make_model();
  torch::optim::Adam optimizer(model->parameters());
  expect_error<dtrain::IOError>([&] { load_checkpoint(loop.string(), *model, optimizer); },
                                "cannot look for checkpoint '" + loop.string() + "'");
}

}  // namespace
