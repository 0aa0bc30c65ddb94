// gradients_are_finite: any NaN or infinity in any gradient (of either
// sign, in any dtype, even where finite values around it cancel) makes a
// step unusable; large finite gradients and parameters without a gradient
// do not.
#include <gtest/gtest.h>

#include <torch/optim/sgd.h>

#include <limits>

#include "dtrain/train/finite_gradients.h"

namespace {

using dtrain::train::gradients_are_finite;

struct TwoParameters {
  at::Tensor weight = at::zeros({3, 4}).requires_grad_();
  at::Tensor bias = at::zeros({4}).requires_grad_();
  torch::optim::SGD sgd{std::vector<at::Tensor>{weight, bias}, torch::optim::SGDOptions(0.1)};

  void set_grads(const at::Tensor& weight_grad, const at::Tensor& bias_grad) {
    weight.mutable_grad() = weight_grad;
    bias.mutable_grad() = bias_grad;
  }
};

TEST(FiniteGradients, FiniteGradientsAndMissingOnesAreUsable) {
  TwoParameters p;
  EXPECT_TRUE(gradients_are_finite(p.sgd)) << "no gradients yet";
  p.set_grads(at::randn({3, 4}), at::full({4}, 1e30));
  EXPECT_TRUE(gradients_are_finite(p.sgd));
  p.bias.mutable_grad() = at::Tensor();
  EXPECT_TRUE(gradients_are_finite(p.sgd));
}

TEST(FiniteGradients, OneNanOrInfinityAnywhereIsNot) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), inf, -inf}) {
    for (int in_weight = 0; in_weight < 2; ++in_weight) {
      TwoParameters p;
      p.set_grads(at::randn({3, 4}), at::randn({4}));
      at::Tensor target = in_weight ? p.weight.mutable_grad() : p.bias.mutable_grad();
      target.view(-1)[2] = bad;
      EXPECT_FALSE(gradients_are_finite(p.sgd)) << bad << (in_weight ? " in weight" : " in bias");
    }
  }
  // +inf in one gradient and -inf in the other: their sums would cancel to NaN.
  TwoParameters p;
  p.set_grads(at::full({3, 4}, inf), at::full({4}, -inf));
  EXPECT_FALSE(gradients_are_finite(p.sgd));
}

TEST(FiniteGradients, HalfGradientsSumWithoutOverflowing) {
  // 12 x 60000 overflows float16 (max 65504), not the float32 sum.
  TwoParameters p;
  p.set_grads(at::full({3, 4}, 60000, at::kHalf), at::zeros({4}, at::kBFloat16));
  EXPECT_TRUE(gradients_are_finite(p.sgd));
  p.bias.mutable_grad()[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(gradients_are_finite(p.sgd));
}

}  // namespace
