// PointNet++'s training recipe, shared by train_pointnet2 (classification)
// and train_partseg (part segmentation): the flags both take, Adam at 1e-3
// with weight decay 1e-4 and the rate times 0.7 every 20 epochs (or a
// cosine over the run, for short ones), the synthetic shapes as the default
// data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <CLI/CLI.hpp>

#include "dtrain/datasets/synthetic_shapes.h"
#include "dtrain/models/set_abstraction.h"
#include "train_flags.h"
#include "training_optimizer.h"

namespace dtrain::apps {

struct PointNet2RecipeOptions : CommonTrainOptions {
  // "synthetic": the embedded synthetic shapes, generated on first use;
  // otherwise a published dataset in data_dir (each app names its own).
  std::string dataset = "synthetic";
  std::string data_dir;  // empty: the dataset's default directory
  int64_t synthetic_classes = 10;
  int64_t synthetic_train_per_class = 100;
  int64_t synthetic_test_per_class = 25;
  int64_t num_points = 1024;  // points of each cloud fed to the model
  std::string model = "ssg";
  double weight_decay = 1e-4;
  // "step": the rate times lr_decay every lr_step epochs (PointNet++'s);
  // "cosine": down from the rate along half a cosine over the run's epochs.
  std::string lr_schedule = "step";
  double lr_decay = 0.7;  // the rate is multiplied by this every lr_step epochs
  int lr_step = 20;
  bool augment = true;  // random scale, shift and jitter, and a new point order

  PointNet2RecipeOptions() {
    epochs = 20;
    batch_size = 16;
    lr = 1e-3;
  }
};

// The common shared settings and the recipe's (check_same_settings);
// --data-dir may differ.
std::vector<dist::Setting> shared_settings(const PointNet2RecipeOptions& options);

// --synthetic-classes, --synthetic-train-per-class, --synthetic-test-per-class, --num-points.
void add_synthetic_flags(CLI::App& app, PointNet2RecipeOptions& options);
// The common flags, then --weight-decay, --lr-schedule, --lr-decay,
// --lr-step, --augment, --checkpoint and --resume (which needs
// --checkpoint).
void add_recipe_flags(CLI::App& app, PointNet2RecipeOptions& options);

// The synthetic shapes these options ask for; clouds hold at least 1,024
// points, so --num-points below that takes a prefix of the same clouds.
datasets::SyntheticShapesOptions synthetic_options(const PointNet2RecipeOptions& options);
// Their directory (--data-dir, else the default root), written first when
// missing; safe for several ranks at once.
std::string ensure_synthetic_root(const PointNet2RecipeOptions& options);
// Throws, naming both numbers, unless the clouds hold at least the centres
// the model's first set abstraction layer samples (otherwise the first
// step would fail, after the data was read).
void check_num_points(const PointNet2RecipeOptions& options,
                      const std::vector<models::SetAbstractionOptions>& layers);
// True when the run reads the synthetic shapes but dtrain was built
// without HDF5, so there are no files: the app generates the same clouds
// in memory (and this says so in the log).
bool synthetic_in_memory(const PointNet2RecipeOptions& options);

// The rate of epoch `epoch` (1-based) for `world` processes, lr scaled by
// --lr-scaling: step, lr * decay^floor((epoch - 1) / step); cosine,
// lr * (1 + cos(pi * (epoch - 1) / epochs)) / 2, the full rate in the first
// epoch and a small one in the last, whatever --epochs is.
double lr_at(const PointNet2RecipeOptions& options, int world, int epoch);
// Adam over `parameters` with --weight-decay, stepped down by lr_at.
TrainingOptimizer adam_training_optimizer(const PointNet2RecipeOptions& options,
                                          const std::vector<at::Tensor>& parameters);

}  // namespace dtrain::apps
