// PointNet++'s recipe's learning-rate schedules (apps/common/pointnet2_recipe):
// the paper's step (x0.7 every 20 epochs) and the cosine over the run that
// short runs take, each scaled by the process count, and the flag that
// chooses between them.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "pointnet2_recipe.h"

namespace {

using dtrain::apps::lr_at;
using dtrain::apps::PointNet2RecipeOptions;

PointNet2RecipeOptions recipe(const std::string& schedule, int epochs) {
  PointNet2RecipeOptions o;
  o.lr = 1e-3;
  o.epochs = epochs;
  o.lr_schedule = schedule;
  return o;
}

TEST(LrSchedule, StepMultipliesByTheDecayEveryStepEpochs) {
  const PointNet2RecipeOptions o = recipe("step", 100);
  EXPECT_DOUBLE_EQ(lr_at(o, 2, 1), 2e-3) << "linear scaling: 2 processes, twice the rate";
  EXPECT_DOUBLE_EQ(lr_at(o, 2, 20), 2e-3);
  EXPECT_DOUBLE_EQ(lr_at(o, 2, 21), 2e-3 * 0.7);
  EXPECT_DOUBLE_EQ(lr_at(o, 2, 41), 2e-3 * 0.7 * 0.7);
}

TEST(LrSchedule, CosineFallsFromTheFullRateOverTheRunWhateverItsLength) {
  for (int epochs : {1, 5, 20, 250}) {
    const PointNet2RecipeOptions o = recipe("cosine", epochs);
    EXPECT_DOUBLE_EQ(lr_at(o, 1, 1), 1e-3) << epochs << " epochs: the first at the full rate";
    double before = lr_at(o, 1, 1);
    for (int epoch = 2; epoch <= epochs; ++epoch) {
      const double now = lr_at(o, 1, epoch);
      EXPECT_LT(now, before) << "epoch " << epoch << " of " << epochs;
      EXPECT_GT(now, 0.0) << "epoch " << epoch << " of " << epochs;
      before = now;
    }
  }
  // Half the rate halfway; 5 epochs: (1 + cos(pi * k / 5)) / 2 for k = 0..4.
  EXPECT_NEAR(lr_at(recipe("cosine", 20), 1, 11), 0.5e-3, 1e-15);
  EXPECT_NEAR(lr_at(recipe("cosine", 5), 1, 5), 1e-3 * (1 + std::cos(std::numbers::pi * 0.8)) / 2,
              1e-15);
  PointNet2RecipeOptions unscaled = recipe("cosine", 5);
  unscaled.lr_scaling = "none";
  EXPECT_DOUBLE_EQ(lr_at(unscaled, 4, 1), 1e-3);
}

TEST(LrSchedule, TheFlagTakesStepOrCosineAndNamesTheChoices) {
  auto parse = [](std::vector<std::string> args) {
    PointNet2RecipeOptions o;
    CLI::App app;
    dtrain::apps::add_recipe_flags(app, o);
    args.insert(args.begin(), "app");
    std::vector<const char*> argv;
    for (const auto& arg : args) {
      argv.push_back(arg.c_str());
    }
    app.parse(static_cast<int>(argv.size()), argv.data());
    return o;
  };
  EXPECT_EQ(parse({}).lr_schedule, "step") << "PointNet++'s schedule by default";
  EXPECT_EQ(parse({"--lr-schedule", "cosine"}).lr_schedule, "cosine");
  try {
    parse({"--lr-schedule", "linear"});
    FAIL() << "--lr-schedule linear was taken";
  } catch (const CLI::ParseError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("linear"), std::string::npos) << what;
    EXPECT_NE(what.find("cosine"), std::string::npos) << what;
  }
}

}  // namespace
