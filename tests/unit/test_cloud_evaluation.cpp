// train_pointnet2's evaluation (apps/point_clouds/cloud_evaluation.h): OA,
// mAcc, predictions and loss on a hand-made example, and the voting copies.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include "cloud_evaluation.h"

namespace {

using dtrain::apps::evaluate_clouds;
using dtrain::apps::Voting;
using dtrain::apps::voting_copy;

// Six clouds of one point whose x is the class the fake model predicts.
dtrain::apps::LabeledTensors six_clouds() {
  at::Tensor inputs = at::rand({6, 1, 3});
  inputs.select(2, 0).view({6}).copy_(at::tensor({0.f, 0.f, 1.f, 1.f, 2.f, 2.f}));
  return {inputs, at::tensor({0, 0, 0, 1, 1, 2}, at::kLong)};
}

at::Tensor fake_logits(const at::Tensor& clouds) {
  return at::one_hot(clouds.select(2, 0).select(1, 0).round().to(at::kLong), 3).to(at::kFloat) * 4;
}

// By hand: class 0 has 2 of 3 right, class 1 has 1 of 2, class 2 1 of 1;
// OA = 4/6, mAcc = (2/3 + 1/2 + 1) / 3.
TEST(CloudEvaluation, OverallAndMeanClassAccuracyByHand) {
  const auto test = six_clouds();
  const dtrain::train::Job alone;
  const auto result =
      evaluate_clouds(fake_logits, test, 3, Voting{}, dtrain::train::EvalContext(alone, 4), true);
  EXPECT_DOUBLE_EQ(result.stats.accuracy, 4.0 / 6);
  ASSERT_EQ(result.stats.extra.size(), 1u);
  EXPECT_DOUBLE_EQ(result.stats.extra[0], (2.0 / 3 + 0.5 + 1.0) / 3);
  EXPECT_EQ(result.predictions, (std::vector<int64_t>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(result.confusion.count(0, 1), 1);
  EXPECT_EQ(result.confusion.count(1, 2), 1);
  const double loss =
      torch::nn::functional::cross_entropy(fake_logits(test.inputs), test.labels).item<double>();
  EXPECT_NEAR(result.stats.mean_loss, loss, 1e-6);
  // Without the predictions (after each training epoch): the same scores.
  const auto scores =
      evaluate_clouds(fake_logits, test, 3, Voting{}, dtrain::train::EvalContext(alone, 4), false);
  EXPECT_TRUE(scores.predictions.empty());
  EXPECT_EQ(scores.stats.accuracy, result.stats.accuracy);
  EXPECT_EQ(scores.stats.extra, result.stats.extra);
  EXPECT_EQ(scores.stats.mean_loss, result.stats.mean_loss);
}

// Votes average the logits of the copies.
TEST(CloudEvaluation, VotesAverageTheCopiesLogits) {
  const auto test = six_clouds();
  const auto forward = [](const at::Tensor& clouds) {
    return at::cat({clouds.select(1, 0), at::zeros({clouds.size(0), 1})}, 1);  // (B, 4)
  };
  const Voting voting{.votes = 3, .seed = 7};
  const dtrain::train::Job alone;
  const auto result =
      evaluate_clouds(forward, test, 4, voting, dtrain::train::EvalContext(alone, 4), true);
  at::Tensor logits = forward(test.inputs);
  for (int64_t copy = 1; copy < 3; ++copy) {
    logits = logits + forward(voting_copy(test.inputs, 0, copy, voting));
  }
  logits = logits / 3;
  const at::Tensor classes = logits.argmax(1).contiguous();
  EXPECT_EQ(result.predictions,
            std::vector<int64_t>(classes.data_ptr<int64_t>(), classes.data_ptr<int64_t>() + 6));
  EXPECT_NEAR(result.stats.mean_loss,
              torch::nn::functional::cross_entropy(logits, test.labels).item<double>(), 1e-5);
}

// Copy 0 is the cloud; another turns it about the up axis (y) and scales
// it by one factor in [0.8, 1.25], turning the normals without scaling
// them; the same copy of the same sample is the same whatever the batch.
TEST(CloudEvaluation, VotingCopiesRotateAboutTheUpAxisAndScale) {
  const Voting voting{.votes = 2, .seed = 3};
  at::Tensor clouds = at::randn({4, 50, 6});
  clouds.narrow(2, 3, 3).div_(clouds.narrow(2, 3, 3).norm(2, 2, true));
  EXPECT_TRUE(voting_copy(clouds, 0, 0, voting).equal(clouds));
  const at::Tensor copy = voting_copy(clouds, 10, 1, voting);
  const at::Tensor ratio = copy.select(2, 1) / clouds.select(2, 1);  // (4, 50): the scale
  for (int64_t b = 0; b < 4; ++b) {
    const double scale = ratio[b][0].item<double>();
    EXPECT_GE(scale, 0.8);
    EXPECT_LE(scale, 1.25);
    EXPECT_TRUE(at::allclose(copy[b].narrow(1, 0, 3).norm(2, 1),
                             clouds[b].narrow(1, 0, 3).norm(2, 1) * scale, 1e-4, 1e-5));
  }
  EXPECT_TRUE(at::allclose(copy.narrow(2, 3, 3).norm(2, 2), at::ones({4, 50}), 1e-4, 1e-5));
  EXPECT_TRUE(at::allclose(copy.select(2, 4), clouds.select(2, 4), 1e-5, 1e-6));
  EXPECT_TRUE(voting_copy(clouds.narrow(0, 2, 2), 12, 1, voting).equal(copy.narrow(0, 2, 2)));
  EXPECT_FALSE(voting_copy(clouds, 10, 2, voting).equal(copy)) << "copies 1 and 2 alike";
}

}  // namespace
