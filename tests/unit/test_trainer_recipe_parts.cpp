// The pieces of the Trainer's recipes, each alone: per-step schedules and
// warmup, clipping by global norm, the optimizers with norms and biases
// left out of weight decay, the ranking of epochs for best-k and early
// stopping, and the recipe's flags and their bad combinations.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <CLI/CLI.hpp>

#include "dtrain/train/best_epochs.h"
#include "dtrain/train/gradient_clipping.h"
#include "dtrain/train/lr_schedule.h"
#include "dtrain/train/optimizers.h"
#include "dtrain/train/trainer_flags.h"
#include "dtrain/util/errors.h"
#include "parse_flags.h"

namespace dtrain::recipe_parts {

using train::BestEpochs;
using train::LrPoint;
using train::LrSchedule;
using train::OptimizerKind;
using train::OptimizerOptions;
using train::TrainerOptions;

TEST(RecipeSchedules, CosineFallsStepByStepAndWarmupRisesLinearly) {
  const LrSchedule cosine = LrSchedule::cosine(2);
  // 10 steps an epoch: step 5 of epoch 2 lies three quarters into the run.
  EXPECT_NEAR(cosine.at(1.0, LrPoint{.epoch = 2, .step = 5, .steps_per_epoch = 10}),
              0.5 * (1 + std::cos(std::numbers::pi * 0.75)), 1e-15);
  EXPECT_DOUBLE_EQ(cosine.at(1.0, LrPoint{.epoch = 1, .step = 0, .steps_per_epoch = 10}), 1.0);
  EXPECT_NEAR(LrSchedule::cosine(2, 0.1).at(1.0, LrPoint{.epoch = 3, .steps_per_epoch = 10}), 0.1,
              1e-15)
      << "the floor at the run's end";
  // Per epoch, as before: the first step of each.
  EXPECT_NEAR(LrSchedule::cosine(5).at(1e-3, 5), 1e-3 * (1 + std::cos(std::numbers::pi * 0.8)) / 2,
              1e-15);
  EXPECT_DOUBLE_EQ(
      LrSchedule::step(0.5, 2).at(1.0, LrPoint{.epoch = 3, .step = 7, .steps_per_epoch = 10}), 0.5);
  EXPECT_DOUBLE_EQ(train::warmup_factor(0, 4, 0.2), 0.2);
  EXPECT_DOUBLE_EQ(train::warmup_factor(2, 4, 0.2), 0.6);
  EXPECT_DOUBLE_EQ(train::warmup_factor(4, 4, 0.2), 1.0);
  EXPECT_DOUBLE_EQ(train::warmup_factor(0, 0, 0.2), 1.0) << "no warmup";
  const LrSchedule mine = LrSchedule::custom(
      [](double rate, const LrPoint& point) { return rate / (1 + point.run_step()); }, "1/t");
  EXPECT_DOUBLE_EQ(mine.at(1.0, LrPoint{.epoch = 2, .step = 1, .steps_per_epoch = 3}), 0.2);
  EXPECT_EQ(mine.description(), "1/t");
}

// Gradients (3, 4) and (12): their global norm is 13.
std::vector<at::Tensor> parameters_with_gradients() {
  std::vector<at::Tensor> parameters = {at::zeros({2}, at::kFloat), at::zeros({1}, at::kFloat)};
  parameters[0].mutable_grad() = at::tensor({3.0F, 4.0F});
  parameters[1].mutable_grad() = at::tensor({12.0F});
  return parameters;
}

TEST(RecipeClipping, ScalesToTheNormAboveItAndLeavesGradientsBelowIt) {
  auto parameters = parameters_with_gradients();
  torch::optim::SGD sgd(parameters, torch::optim::SGDOptions(0.1));
  const at::Tensor norm = train::clip_gradient_norm(sgd, 100.0);
  EXPECT_FLOAT_EQ(norm.item<float>(), 13.0F);
  EXPECT_TRUE(at::equal(parameters[0].grad(), at::tensor({3.0F, 4.0F}))) << "bit for bit";
  train::clip_gradient_norm(sgd, 6.5);
  EXPECT_TRUE(at::allclose(parameters[0].grad(), at::tensor({1.5F, 2.0F})));
  EXPECT_TRUE(at::allclose(parameters[1].grad(), at::tensor({6.0F})));
  EXPECT_THROW(train::clip_gradient_norm(sgd, 0), Error);
}

TEST(RecipeOptimizers, NormsAndBiasesCanBeLeftOutOfWeightDecay) {
  torch::nn::Sequential model(torch::nn::Linear(3, 4), torch::nn::BatchNorm1d(4),
                              torch::nn::Linear(4, 2));
  const auto all = train::make_optimizer(
      *model, 0.1, OptimizerOptions().kind(OptimizerKind::kAdamW).weight_decay(0.05));
  ASSERT_EQ(all->param_groups().size(), 1u);
  EXPECT_NE(dynamic_cast<torch::optim::AdamW*>(all.get()), nullptr);
  const auto some = train::make_optimizer(*model, 0.1,
                                          OptimizerOptions()
                                              .kind(OptimizerKind::kAdamW)
                                              .weight_decay(0.05)
                                              .decay_norms_and_biases(false));
  ASSERT_EQ(some->param_groups().size(), 2u);
  auto decay = [&](size_t group) {
    return static_cast<torch::optim::AdamWOptions&>(some->param_groups()[group].options())
        .weight_decay();
  };
  EXPECT_EQ(decay(0), 0.05);
  EXPECT_EQ(decay(1), 0.0);
  EXPECT_EQ(some->param_groups()[0].params().size(), 2u) << "the two linear weights";
  EXPECT_EQ(some->param_groups()[1].params().size(), 4u) << "two biases, the norm's two";
  const auto nesterov = train::make_optimizer(
      *model, 0.1, OptimizerOptions().kind(OptimizerKind::kSgd).momentum(0.9).nesterov(true));
  EXPECT_TRUE(
      static_cast<torch::optim::SGDOptions&>(nesterov->param_groups()[0].options()).nesterov());
  EXPECT_THROW(train::make_optimizer(*model, 0.1, OptimizerOptions().nesterov(true)), Error);
}

TEST(RecipeBestEpochs, RanksEpochsAndCountsThoseWithoutGain) {
  BestEpochs accuracy;
  for (const auto& [epoch, value] :
       std::vector<std::pair<int, double>>{{1, 0.2}, {2, 0.5}, {3, 0.3}, {4, 0.5}, {5, 0.4}}) {
    accuracy.add(epoch, value);
  }
  EXPECT_EQ(accuracy.best(2), (std::vector<int>{2, 4})) << "a tie ranks the earlier first";
  EXPECT_EQ(accuracy.best(9).size(), 5u);
  EXPECT_EQ(accuracy.epochs_since_improvement(0), 3);
  BestEpochs loss(/*lower_is_better=*/true);
  for (const auto& [epoch, value] :
       std::vector<std::pair<int, double>>{{1, 1.0}, {2, 0.8}, {3, 0.75}}) {
    loss.add(epoch, value);
  }
  EXPECT_EQ(loss.best(1), (std::vector<int>{3}));
  EXPECT_EQ(loss.epochs_since_improvement(0), 0);
  EXPECT_EQ(loss.epochs_since_improvement(0.1), 1) << "0.75 is not 0.1 below 0.8";
  BestEpochs restored(true);
  restored.load(loss.as_tensor());
  EXPECT_EQ(restored.best(3), (std::vector<int>{3, 2, 1}));
}

TEST(RecipeFlags, ParseIntoTheOptionsAndRefuseBadCombinations) {
  CLI::App app;
  TrainerOptions options;
  train::FlagTable flags(app);
  train::add_trainer_flags(flags, options);
  testing::parse_flags(app, {"--optimizer",
                             "sgd",
                             "--momentum",
                             "0.9",
                             "--nesterov",
                             "--weight-decay",
                             "0.05",
                             "--no-decay-norms-biases",
                             "--accumulate",
                             "4",
                             "--clip-grad-norm",
                             "1.5",
                             "--warmup-steps",
                             "100",
                             "--find-unused-parameters",
                             "--bucket-cap-mb",
                             "5",
                             "--comm-hook",
                             "bf16",
                             "--best-by",
                             "test_loss",
                             "--best-mode",
                             "min",
                             "--early-stop-patience",
                             "3"});
  EXPECT_EQ(options.optimizer().kind(), OptimizerKind::kSgd);
  EXPECT_TRUE(options.optimizer().nesterov());
  EXPECT_FALSE(options.optimizer().decay_norms_and_biases());
  EXPECT_EQ(options.optimizer().weight_decay(), 0.05);
  EXPECT_EQ(options.accumulate(), 4);
  EXPECT_EQ(options.clip_grad_norm(), 1.5);
  EXPECT_EQ(options.warmup_steps(), 100);
  EXPECT_TRUE(options.ddp().find_unused_parameters);
  EXPECT_EQ(options.ddp().bucket_cap_mb, 5.0);
  ASSERT_NE(options.ddp().comm_hook, nullptr);
  EXPECT_TRUE(options.best_lower());
  EXPECT_EQ(options.early_stop_patience(), 3);
  auto problem = [](const TrainerOptions& o) {
    const auto found = train::option_problem(o);
    return found ? found->flag + ": " + found->message : "";
  };
  EXPECT_EQ(problem(TrainerOptions().accumulate(2).rank_weights(train::RankWeights::automatic()))
                .rfind("--accumulate 2: needs --rank-weights equal", 0),
            0u);
  EXPECT_EQ(problem(TrainerOptions().checkpoint("c.pt").checkpoint_steps(3).accumulate(2))
                .rfind("--checkpoint-steps 3: must be a multiple of --accumulate 2", 0),
            0u);
  EXPECT_EQ(problem(TrainerOptions().keep_best(2)),
            "--keep-best: needs --checkpoint, the file the best are copies of");
  EXPECT_EQ(problem(TrainerOptions().optimizer(OptimizerOptions().nesterov(true))),
            "--nesterov: needs --optimizer sgd and a --momentum above 0");
  EXPECT_EQ(problem(TrainerOptions().best_by("miou")).rfind("--best-by: must be test_accuracy", 0),
            0u);
}

}  // namespace dtrain::recipe_parts
