// PointNet++'s recipe (apps/point_clouds/pointnet2_recipe): --lr-schedule
// chooses the paper's step (x0.7 every 20 epochs, --lr-decay, --lr-step)
// or the cosine over the run that short runs take, as the Trainer's
// schedule; the flag names its choices; the recipe's defaults and the
// batch norm's need of 2 clouds a step.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "parse_flags.h"
#include "pointnet2_recipe.h"

namespace {

using dtrain::apps::PointNet2RecipeOptions;

PointNet2RecipeOptions parse_recipe(std::vector<std::string> args) {
  PointNet2RecipeOptions o;
  CLI::App app;
  dtrain::train::FlagTable flags(app);
  dtrain::apps::add_recipe_flags(flags, o);
  dtrain::testing::parse_flags(app, std::move(args));
  return o;
}

TEST(PointNet2Recipe, TheScheduleFlagPicksStepOrCosine) {
  const PointNet2RecipeOptions step = parse_recipe({});
  EXPECT_EQ(step.lr_schedule, dtrain::apps::LrScheduleKind::kStep)
      << "PointNet++'s schedule by default";
  EXPECT_EQ(dtrain::apps::trainer_options(step).lr_schedule().description(),
            "x0.7 every 20 epochs");
  const auto decay =
      dtrain::apps::trainer_options(parse_recipe({"--lr-decay", "0.5", "--lr-step", "3"}))
          .lr_schedule();
  EXPECT_DOUBLE_EQ(decay.at(1e-3, 4), 0.5e-3);
  const auto cosine =
      dtrain::apps::trainer_options(parse_recipe({"--lr-schedule", "cosine", "--epochs", "5"}));
  EXPECT_EQ(cosine.lr_schedule().description(), "down along a cosine over 5 epochs");
  EXPECT_DOUBLE_EQ(cosine.lr_schedule().at(1e-3, 1), 1e-3);
  try {
    parse_recipe({"--lr-schedule", "linear"});
    FAIL() << "--lr-schedule linear was taken";
  } catch (const CLI::ParseError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("linear"), std::string::npos) << what;
    EXPECT_NE(what.find("cosine"), std::string::npos) << what;
  }
}

TEST(PointNet2Recipe, DefaultsAndBatchNormsNeed) {
  const PointNet2RecipeOptions o = parse_recipe({});
  EXPECT_EQ(o.trainer.epochs(), 20);
  EXPECT_EQ(o.trainer.batch_size(), 16);
  EXPECT_DOUBLE_EQ(o.trainer.lr(), 1e-3);
  EXPECT_EQ(o.trainer.noun(), "clouds");
  try {
    parse_recipe({"--batch-size", "1"});
    FAIL() << "--batch-size 1 was taken";
  } catch (const CLI::ValidationError& error) {
    EXPECT_EQ(std::string(error.what()),
              "--batch-size 1: PointNet++'s batch norm needs at least 2 clouds per step");
  }
}

}  // namespace
