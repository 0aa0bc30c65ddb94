// PointNet++'s training recipe, shared by train_pointnet2 (classification)
// and train_partseg (part segmentation): the flags both take, Adam at 1e-3
// with weight decay 1e-4 and the rate times 0.7 every 20 epochs (or a
// cosine over the run, for short ones), batches of 16 clouds, the
// synthetic shapes as the default data.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "data_limits.h"
#include "dtrain/datasets/synthetic_shapes.h"
#include "dtrain/models/set_abstraction.h"
#include "dtrain/train/flag_table.h"
#include "dtrain/train/trainer_options.h"
#include "dtrain/util/enum_words.h"

namespace dtrain::apps {

// --dataset: the embedded synthetic shapes, generated on first use, or a
// published dataset in --data-dir (each app names its own).
enum class CloudData { kSynthetic, kPublished };
// --lr-schedule: PointNet++'s step, or a cosine over the run.
enum class LrScheduleKind { kStep, kCosine, kConstant };
// "step", "cosine", "constant".
const util::EnumWords<LrScheduleKind>& lr_schedule_words();

struct PointNet2RecipeOptions {
  train::TrainerOptions trainer = train::TrainerOptions()
                                      .epochs(20)
                                      .batch_size(16)
                                      .lr(1e-3)
                                      .noun("clouds")
                                      .eval_batch(64)
                                      .needs_two_per_process(true)
                                      .optimizer(train::OptimizerOptions().weight_decay(1e-4));
  DataLimits limits;
  CloudData data = CloudData::kSynthetic;
  std::string data_dir;  // empty: the dataset's default directory
  int64_t synthetic_classes = 10;
  int64_t synthetic_train_per_class = 100;
  int64_t synthetic_test_per_class = 25;
  int64_t num_points = 1024;  // points of each cloud fed to the model
  std::string model = "ssg";
  LrScheduleKind lr_schedule = LrScheduleKind::kStep;
  double lr_decay = 0.7;  // the rate is multiplied by this every lr_step epochs
  int lr_step = 20;
  bool augment = true;  // random scale, shift and jitter, and a new point order
  // Cross-entropy against targets of 1 - s on the label and s / classes
  // spread over all (PointNeXt trains with 0.2); 0: plain cross-entropy.
  double label_smoothing = 0;
};

// --dataset with the words `data_words` (synthetic and the app's published
// set), --data-dir (`data_dir_help`), --synthetic-classes,
// --synthetic-train-per-class, --synthetic-test-per-class, --num-points.
void add_data_flags(train::FlagTable& flags, PointNet2RecipeOptions& options,
                    const util::EnumWords<CloudData>& data_words, const std::string& dataset_help,
                    const std::string& data_dir_help);
// The Trainer's flags, the data limits, then --lr-schedule, --lr-decay,
// --lr-step, --label-smoothing and --augment; and PointNet++'s batch
// norm's need of 2 clouds a step.
void add_recipe_flags(train::FlagTable& flags, PointNet2RecipeOptions& options);

// The Trainer's options with the recipe's learning-rate schedule.
train::TrainerOptions trainer_options(const PointNet2RecipeOptions& options);
// The optimizer of --optimizer over `model`'s parameters: Adam with weight
// decay 1e-4 unless the flags say otherwise (the Trainer sets its rate).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const PointNet2RecipeOptions& options,
                                                        const torch::nn::Module& model);

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

}  // namespace dtrain::apps
