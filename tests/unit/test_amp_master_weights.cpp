// MasterWeights (apex O2): updates too small for a bf16 weight accumulate in
// the fp32 copy, the model follows the copy, and with float16 and a
// GradScaler an overflow leaves both untouched.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <limits>

#include "dtrain/amp/grad_scaler.h"
#include "dtrain/amp/master_weights.h"
#include "dtrain/util/errors.h"

namespace {

namespace amp = dtrain::amp;

// 1e-3 is below half the spacing of bf16 values at 1.0 (2^-8 = 0.0039):
// 1.0 - 1e-3 rounds back to 1.0 in bf16.
TEST(MasterWeights, SmallUpdatesAccumulateInTheFp32Copy) {
  at::Tensor plain = at::ones({3}, at::kBFloat16).set_requires_grad(true);
  at::Tensor model = at::ones({3}, at::kBFloat16).set_requires_grad(true);
  torch::optim::SGD plain_sgd({plain}, torch::optim::SGDOptions(1.0));
  amp::MasterWeights master({model});
  ASSERT_EQ(master.parameters()[0].scalar_type(), at::kFloat);
  torch::optim::SGD master_sgd(master.parameters(), torch::optim::SGDOptions(1.0));
  for (int i = 0; i < 10; ++i) {
    plain.mutable_grad() = at::full({3}, 1e-3, at::kBFloat16);
    plain_sgd.step();
    model.mutable_grad() = at::full({3}, 1e-3, at::kBFloat16);
    master.copy_grads_to_master();
    master_sgd.step();
    master.copy_master_to_model();
    master.zero_grad();
    EXPECT_FALSE(model.grad().defined());
  }
  EXPECT_TRUE(at::equal(plain.detach(), at::ones({3}, at::kBFloat16))) << "bf16 SGD lost them";
  // The copy holds 1 - 10 * bf16(1e-3) (bf16(1e-3) = 0.00099945068359375).
  EXPECT_NEAR(master.parameters()[0][0].item<double>(), 1.0 - 10 * 0.00099945068359375, 1e-6);
  EXPECT_TRUE(at::equal(model.detach(), master.parameters()[0].detach().to(at::kBFloat16)));
  EXPECT_LT(model[0].item<float>(), 1.0f);
}

TEST(MasterWeights, Float16ModelWithGradScalerSkipsOverflows) {
  torch::nn::Linear layer(4, 2);
  layer->to(at::kHalf);
  amp::MasterWeights master(layer->parameters());
  torch::optim::SGD optimizer(master.parameters(), torch::optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  const at::Tensor x = at::randn({8, 4}).to(at::kHalf);

  auto iterate = [&](bool poison) {
    at::Tensor loss = layer(x).to(at::kFloat).pow(2).mean();
    scaler.scale(loss).backward();
    EXPECT_EQ(layer->weight.grad().scalar_type(), at::kHalf);
    if (poison) {
      layer->weight.mutable_grad()[0][0] = std::numeric_limits<float>::infinity();
    }
    master.copy_grads_to_master();
    const bool stepped = scaler.step(optimizer);
    scaler.update();
    master.copy_master_to_model();
    master.zero_grad();
    return stepped;
  };
  const at::Tensor before = master.parameters()[0].detach().clone();
  EXPECT_FALSE(iterate(true));
  EXPECT_TRUE(at::equal(master.parameters()[0].detach(), before));
  EXPECT_EQ(scaler.get_scale(), 512.0);
  EXPECT_TRUE(iterate(false));
  EXPECT_FALSE(at::equal(master.parameters()[0].detach(), before));
  EXPECT_TRUE(at::equal(layer->weight.detach(), master.parameters()[0].detach().to(at::kHalf)));
}

TEST(MasterWeights, ParametersWithoutGradientsStayWithout) {
  at::Tensor a = at::ones({2}, at::kBFloat16).set_requires_grad(true);
  at::Tensor b = at::ones({2}, at::kBFloat16).set_requires_grad(true);
  amp::MasterWeights master({a, b});
  a.mutable_grad() = at::ones({2}, at::kBFloat16);
  master.copy_grads_to_master();
  EXPECT_TRUE(master.parameters()[0].grad().defined());
  EXPECT_FALSE(master.parameters()[1].grad().defined());
}

TEST(MasterWeights, RejectsNonFloatingParameters) {
  try {
    amp::MasterWeights master({at::ones({2}), at::ones({2}, at::kLong)});
    FAIL() << "no error";
  } catch (const dtrain::Error& error) {
    EXPECT_NE(
        std::string(error.what()).find("model parameter 1 must be a floating tensor, got Long"),
        std::string::npos)
        << error.what();
  }
}

}  // namespace
