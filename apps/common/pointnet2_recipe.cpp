#include "pointnet2_recipe.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/optim/adam.h>

#include "dtrain/config.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/errors.h"

namespace dtrain::apps {

namespace ds = dtrain::datasets;

void add_synthetic_flags(CLI::App& app, PointNet2RecipeOptions& options) {
  app.add_option("--synthetic-classes", options.synthetic_classes,
                 "Kinds of shape in the synthetic dataset")
      ->check(CLI::Range(int64_t{2}, static_cast<int64_t>(ds::synthetic_shape_names().size())))
      ->capture_default_str();
  app.add_option("--synthetic-train-per-class", options.synthetic_train_per_class,
                 "Synthetic training clouds of each class")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--synthetic-test-per-class", options.synthetic_test_per_class,
                 "Synthetic test clouds of each class")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--num-points", options.num_points, "Points of each cloud fed to the model")
      ->check(dtrain::util::positive())
      ->capture_default_str();
}

std::vector<dist::Setting> shared_settings(const PointNet2RecipeOptions& options) {
  auto text = [](const auto& value) { return fmt::format("{}", value); };
  std::vector<dist::Setting> settings =
      shared_settings(static_cast<const CommonTrainOptions&>(options));
  settings.insert(settings.end(),
                  {{"--dataset", options.dataset},
                   {"--synthetic-classes", text(options.synthetic_classes)},
                   {"--synthetic-train-per-class", text(options.synthetic_train_per_class)},
                   {"--synthetic-test-per-class", text(options.synthetic_test_per_class)},
                   {"--num-points", text(options.num_points)},
                   {"--model", options.model},
                   {"--weight-decay", text(options.weight_decay)},
                   {"--lr-schedule", options.lr_schedule},
                   {"--lr-decay", text(options.lr_decay)},
                   {"--lr-step", text(options.lr_step)},
                   {"--augment", text(options.augment)}});
  return settings;
}

void add_recipe_flags(CLI::App& app, PointNet2RecipeOptions& options) {
  add_common_train_flags(app, options, "clouds");
  app.add_option("--weight-decay", options.weight_decay, "Adam weight decay")
      ->check(dtrain::util::non_negative())
      ->capture_default_str();
  app.add_option("--lr-schedule", options.lr_schedule,
                 "step: the rate times --lr-decay every --lr-step epochs (PointNet++'s, for "
                 "runs of hundreds of epochs); cosine: from the rate down along half a cosine "
                 "over --epochs (short runs end settled)")
      ->check(CLI::IsMember({"step", "cosine"}))
      ->capture_default_str();
  app.add_option("--lr-decay", options.lr_decay,
                 "Factor applied to the learning rate every --lr-step epochs (--lr-schedule step)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--lr-step", options.lr_step,
                 "Epochs between learning-rate decays (--lr-schedule step)")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_flag("--augment,!--no-augment", options.augment,
               "Randomly scale, shift and jitter training clouds and reorder their points")
      ->capture_default_str();
  app.callback([&options] {
    if (options.batch_size < 2) {
      throw CLI::ValidationError("--batch-size " + std::to_string(options.batch_size),
                                 "PointNet++'s batch norm needs at least 2 clouds per step");
    }
  });
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
  if (DTRAIN_WITH_HDF5 || options.dataset != "synthetic") {
    return false;
  }
  spdlog::info("dtrain was built without HDF5: generating the synthetic shapes in memory");
  return true;
}

double lr_at(const PointNet2RecipeOptions& options, int world, int epoch) {
  if (options.lr_schedule == "cosine") {
    const double done = static_cast<double>(epoch - 1) / options.epochs;  // of the run, in [0, 1)
    return options.scaled_lr(world) * 0.5 * (1.0 + std::cos(std::numbers::pi * done));
  }
  return options.scaled_lr(world) * std::pow(options.lr_decay, (epoch - 1) / options.lr_step);
}

TrainingOptimizer adam_training_optimizer(const PointNet2RecipeOptions& options,
                                          const std::vector<at::Tensor>& parameters) {
  return {.optimizer = std::make_unique<torch::optim::Adam>(
              parameters, torch::optim::AdamOptions(options.lr).weight_decay(options.weight_decay)),
          .lr_at = [options](int world, int epoch) { return lr_at(options, world, epoch); },
          .summary =
              [options](int world) {
                const std::string schedule =
                    options.lr_schedule == "cosine"
                        ? fmt::format("down along a cosine over {} epochs", options.epochs)
                        : fmt::format("x{} every {} epochs", options.lr_decay, options.lr_step);
                return fmt::format("Adam at {} ({}), {}", options.scaled_lr(world),
                                   options.lr_scaling_words(), schedule);
              }};
}

}  // namespace dtrain::apps
