// PointNet++'s training recipe, shared by train_pointnet2 (classification)
// and train_partseg (part segmentation): the flags both take, Adam at 1e-3
// with weight decay 1e-4 and the rate times 0.7 every 20 epochs, the
// synthetic shapes as the default data, the seeds of augmentation, and
// checkpoints every rank resumes from at the same epoch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <CLI/CLI.hpp>

#include "dtrain/amp/grad_scaler.h"
#include "dtrain/datasets/synthetic_shapes.h"
#include "dtrain/models/set_abstraction.h"
#include "train_flags.h"
#include "training_job.h"

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
  double lr_decay = 0.7;  // the rate is multiplied by this every lr_step epochs
  int lr_step = 20;
  bool augment = true;     // random scale, shift and jitter, and a new point order
  std::string checkpoint;  // written by rank 0 after every epoch; empty: none
  bool resume = false;     // continue from `checkpoint` when it exists

  PointNet2RecipeOptions() {
    epochs = 20;
    batch_size = 16;
    lr = 1e-3;
  }
};

// --synthetic-classes, --synthetic-train-per-class, --synthetic-test-per-class, --num-points.
void add_synthetic_flags(CLI::App& app, PointNet2RecipeOptions& options);
// The common flags, then --weight-decay, --lr-decay, --lr-step, --augment,
// --checkpoint and --resume (which needs --checkpoint).
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

// The step schedule: lr (scaled for `world`) * decay^floor((epoch - 1) / step).
double lr_at(const PointNet2RecipeOptions& options, int world, int epoch);
// Sets every parameter group of an Adam optimizer to `lr`.
void set_adam_lr(torch::optim::Optimizer& optimizer, double lr);

// Loads --checkpoint into the module, the optimizer and the fp16 loss
// scaler (when there is one) when --resume asks for it; returns the epochs
// it holds (0 when there is none yet).
int64_t resume_from_checkpoint(const PointNet2RecipeOptions& options, torch::nn::Module& module,
                               torch::optim::Optimizer& optimizer, amp::GradScaler* scaler);
// Throws unless every rank resumes from the same epoch: a rank that found
// no checkpoint (another node, the file not copied there) would otherwise
// train from scratch beside the others and run epochs they skip.
void check_same_resume_point(const Job& job, int64_t epochs_done);

}  // namespace dtrain::apps
