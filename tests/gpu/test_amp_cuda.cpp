// dtrain::amp on CUDA: fp16/bf16 autocast, GradScaler with its scale on the
// device (fused update kernel, host-path agreement), fp16 training that
// survives injected overflows, and the point ops' policy under fp16
// autocast. Skips, saying why, where no CUDA device is visible.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <limits>

#include "dtrain/amp/autocast.h"
#include "dtrain/amp/grad_scaler.h"
#include "dtrain/amp/master_weights.h"
#include "dtrain/config.h"
#include "dtrain/kernels/pointnet2.h"

namespace {

namespace amp = dtrain::amp;
constexpr float kInf = std::numeric_limits<float>::infinity();

class AmpCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!DTRAIN_WITH_CUDA) {
      GTEST_SKIP() << "dtrain was built without CUDA (DTRAIN_CUDA=OFF or no nvcc)";
    }
    if (!at::hasCUDA()) {
      GTEST_SKIP() << "no CUDA device visible";
    }
  }
};

TEST_F(AmpCuda, AutocastRunsMatmulsInHalfAndBfloat16) {
  const at::Tensor a = at::randn({8, 8}, at::kCUDA);
  {
    amp::AutocastGuard fp16(at::kCUDA);
    EXPECT_EQ(at::mm(a, a).scalar_type(), at::kHalf);
    amp::AutocastGuard bf16(amp::AutocastOptions(at::kCUDA).dtype(at::kBFloat16));
    EXPECT_EQ(at::mm(a, a).scalar_type(), at::kBFloat16);
  }
  EXPECT_EQ(at::mm(a, a).scalar_type(), at::kFloat);
}

// fp16 autocast training of a small regression with overflows injected on
// some steps: those steps are skipped, the others train.
TEST_F(AmpCuda, Fp16TrainingWithGradScalerSkipsInjectedOverflows) {
  at::manual_seed(0);
  torch::nn::Linear model(32, 1);
  model->to(at::kCUDA);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05));
  amp::GradScaler scaler(amp::GradScalerOptions().growth_interval(10));
  const at::Tensor x = at::randn({256, 32}, at::kCUDA);
  const at::Tensor y = x.sum(1, true) * 0.1;
  double first_loss = 0;
  double last_loss = 0;
  for (int step = 0; step < 60; ++step) {
    optimizer.zero_grad();
    at::Tensor loss;
    {
      amp::AutocastGuard autocast(at::kCUDA);
      const at::Tensor out = model(x);
      EXPECT_EQ(out.scalar_type(), at::kHalf);
      loss = (out.to(at::kFloat) - y).pow(2).mean();
    }
    scaler.scale(loss).backward();
    EXPECT_EQ(model->weight.grad().scalar_type(), at::kFloat);
    const bool poison = step % 17 == 5;
    if (poison) {
      at::NoGradGuard no_grad;
      model->weight.mutable_grad()[0][3] = kInf;
    }
    EXPECT_EQ(scaler.step(optimizer), !poison) << "step " << step;
    scaler.update();
    (step == 0 ? first_loss : last_loss) = loss.item<double>();
  }
  EXPECT_LT(last_loss, 0.1 * first_loss);
}

// The CUDA fused update kernel and dtrain's host state machine agree.
TEST_F(AmpCuda, FusedKernelMatchesHostStateMachine) {
  amp::GradScaler fused(amp::GradScalerOptions().growth_interval(3));
  amp::GradScaler host(amp::GradScalerOptions().growth_interval(3).max_scale(
      std::numeric_limits<double>::infinity()));
  at::Tensor p1 = at::ones({4}, at::kCUDA).set_requires_grad(true);
  at::Tensor p2 = at::ones({4}, at::kCUDA).set_requires_grad(true);
  torch::optim::SGD o1({p1}, torch::optim::SGDOptions(0.1));
  torch::optim::SGD o2({p2}, torch::optim::SGDOptions(0.1));
  for (int step = 0; step < 50; ++step) {
    const float grad = step % 7 == 3 ? kInf : 0.01f;
    for (auto [scaler, p, o] : {std::tuple{&fused, &p1, &o1}, std::tuple{&host, &p2, &o2}}) {
      scaler->scale(at::ones({}, at::kCUDA));
      p->mutable_grad() = at::full({4}, grad, at::kCUDA) * static_cast<float>(scaler->get_scale());
      scaler->step(*o);
      scaler->update();
    }
    ASSERT_EQ(fused.get_scale(), host.get_scale()) << "step " << step;
    ASSERT_EQ(fused.growth_tracker(), host.growth_tracker()) << "step " << step;
  }
  EXPECT_TRUE(at::equal(p1, p2));
}

TEST_F(AmpCuda, MasterWeightsWithAHalfModel) {
  at::Tensor model =
      at::ones({3}, at::TensorOptions().dtype(at::kHalf).device(at::kCUDA)).set_requires_grad(true);
  amp::MasterWeights master({model});
  EXPECT_TRUE(master.parameters()[0].is_cuda());
  torch::optim::SGD optimizer(master.parameters(), torch::optim::SGDOptions(1.0));
  for (int i = 0; i < 10; ++i) {
    // 1e-4 is lost when added to 1.0 in fp16 (spacing 2^-10 ~ 1e-3).
    model.mutable_grad() = at::full({3}, 1e-4, model.options());
    master.copy_grads_to_master();
    optimizer.step();
    master.copy_master_to_model();
  }
  EXPECT_NEAR(master.parameters()[0][0].item<double>(), 1.0 - 10 * 1e-4, 1e-5);
}

TEST_F(AmpCuda, PointOpsKeepCoordinatesFp32UnderFp16Autocast) {
  const at::Tensor xyz = at::rand({2, 128, 3}, at::kCUDA);
  const at::Tensor points = at::randn({2, 128, 6}, at::kCUDA);
  const at::Tensor weight = at::randn({16, 6}, at::kCUDA);
  amp::AutocastGuard autocast(at::kCUDA);
  const at::Tensor features = at::linear(points, weight).transpose(1, 2).contiguous();
  ASSERT_EQ(features.scalar_type(), at::kHalf);
  const at::Tensor idx = dtrain::kernels::furthest_point_sample(xyz, 32);
  const at::Tensor centres =
      dtrain::kernels::gather_points(xyz.transpose(1, 2), idx).transpose(1, 2);
  EXPECT_EQ(centres.scalar_type(), at::kFloat);
  const auto knn = dtrain::kernels::knn(centres, xyz, 8);
  EXPECT_EQ(knn.dist2.scalar_type(), at::kFloat);
  EXPECT_EQ(dtrain::kernels::group_points(features, knn.idx).scalar_type(), at::kHalf);
}

}  // namespace
