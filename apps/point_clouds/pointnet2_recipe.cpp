#include "pointnet2_recipe.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "dtrain/config.h"
#include "dtrain/train/trainer_flags.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/errors.h"

namespace dtrain::apps {

namespace ds = dtrain::datasets;
using train::Agreement;

const util::EnumWords<LrScheduleKind>& lr_schedule_words() {
  static const util::EnumWords<LrScheduleKind> words{{"step", LrScheduleKind::kStep},
                                                     {"cosine", LrScheduleKind::kCosine},
                                                     {"constant", LrScheduleKind::kConstant}};
  return words;
}

void add_data_flags(train::FlagTable& flags, PointNet2RecipeOptions& options,
                    const util::EnumWords<CloudData>& data_words, const std::string& dataset_help,
                    const std::string& data_dir_help) {
  flags.topic("Data");
  flags.add_choice("--dataset", options.data, data_words, dataset_help, Agreement::same());
  flags.add("--data-dir", options.data_dir, data_dir_help, Agreement::may_differ());
  flags.advise("give each a --data-dir holding the same dataset");
  flags
      .add("--synthetic-classes", options.synthetic_classes,
           "Kinds of shape in the synthetic dataset", Agreement::same())
      ->check(CLI::Range(int64_t{2}, static_cast<int64_t>(ds::synthetic_shape_names().size())))
      ->capture_default_str();
  flags
      .add("--synthetic-train-per-class", options.synthetic_train_per_class,
           "Synthetic training clouds of each class", Agreement::same())
      ->check(util::positive())
      ->capture_default_str();
  flags
      .add("--synthetic-test-per-class", options.synthetic_test_per_class,
           "Synthetic test clouds of each class", Agreement::same())
      ->check(util::positive())
      ->capture_default_str();
  flags
      .add("--num-points", options.num_points, "Points of each cloud fed to the model",
           Agreement::same())
      ->check(util::positive())
      ->capture_default_str();
}

void add_recipe_flags(train::FlagTable& flags, PointNet2RecipeOptions& options) {
  train::add_trainer_flags(flags, options.trainer);
  add_data_limit_flags(flags, options.limits, "clouds");
  flags.topic("Training");
  flags.add_choice("--lr-schedule", options.lr_schedule, lr_schedule_words(),
                   "step: the rate times --lr-decay every --lr-step epochs (PointNet++'s, for "
                   "runs of hundreds of epochs); cosine: from the rate down along half a cosine "
                   "over --epochs, step by step (short runs end settled); constant",
                   Agreement::same());
  flags
      .add("--label-smoothing", options.label_smoothing,
           "Spread this much of each training target over all classes (PointNeXt: 0.2)",
           Agreement::same())
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  flags
      .add("--lr-decay", options.lr_decay,
           "Factor applied to the learning rate every --lr-step epochs (--lr-schedule step)",
           Agreement::same())
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  flags
      .add("--lr-step", options.lr_step, "Epochs between learning-rate decays (--lr-schedule step)",
           Agreement::same())
      ->check(util::positive())
      ->capture_default_str();
  flags.topic("Data");
  flags
      .add_switch("--augment,!--no-augment", options.augment,
                  "Randomly scale, shift and jitter training clouds and reorder their points",
                  Agreement::same())
      ->capture_default_str();
  flags.check([&options] {
    if (options.trainer.batch_size() < 2) {
      throw CLI::ValidationError("--batch-size " + std::to_string(options.trainer.batch_size()),
                                 "PointNet++'s batch norm needs at least 2 clouds per step");
    }
  });
}

train::TrainerOptions trainer_options(const PointNet2RecipeOptions& options) {
  train::TrainerOptions trainer = options.trainer;
  switch (options.lr_schedule) {
    case LrScheduleKind::kCosine:
      trainer.lr_schedule(train::LrSchedule::cosine(trainer.epochs()));
      break;
    case LrScheduleKind::kStep:
      trainer.lr_schedule(train::LrSchedule::step(options.lr_decay, options.lr_step));
      break;
    case LrScheduleKind::kConstant:
      trainer.lr_schedule(train::LrSchedule::constant());
      break;
  }
  return trainer;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const PointNet2RecipeOptions& options,
                                                        const torch::nn::Module& model) {
  return train::make_optimizer(model, options.trainer.lr(), options.trainer.optimizer());
}

ds::SyntheticShapesOptions synthetic_options(const PointNet2RecipeOptions& options) {
  return ds::SyntheticShapesOptions()
      .num_classes(options.synthetic_classes)
      .train_per_class(options.synthetic_train_per_class)
      .test_per_class(options.synthetic_test_per_class)
      .points_per_cloud(std::max<int64_t>(options.num_points, 1024));
}

std::string ensure_synthetic_root(const PointNet2RecipeOptions& options) {
  const auto synthetic = synthetic_options(options);
  const std::string root =
      options.data_dir.empty() ? ds::synthetic_shapes_default_root(synthetic) : options.data_dir;
  return ds::ensure_synthetic_shapes(root, synthetic);
}

void check_num_points(const PointNet2RecipeOptions& options,
                      const std::vector<models::SetAbstractionOptions>& layers) {
  const int64_t centres = layers.empty() ? 0 : layers.front().npoint();
  DTRAIN_CHECK(options.num_points >= centres, "--num-points ", options.num_points,
               " is fewer than the ", centres, " centres the first layer of --model ",
               options.model, " samples from each cloud; use --num-points ", centres,
               " or more, or a smaller model");
}

bool synthetic_in_memory(const PointNet2RecipeOptions& options) {
  if (DTRAIN_WITH_HDF5 || options.data != CloudData::kSynthetic) {
    return false;
  }
  spdlog::info("dtrain was built without HDF5: generating the synthetic shapes in memory");
  return true;
}

}  // namespace dtrain::apps
