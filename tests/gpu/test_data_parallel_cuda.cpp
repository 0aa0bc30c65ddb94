// DataParallel over GPUs against the same module on one device: outputs
// and the gradients summed into the wrapped module. With one GPU, the
// multi-copy path still runs by listing cuda:0 twice; dtrain's own toy CNN
// is copied as a Sequential is. Skips, saying why,
// where no CUDA device is visible.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <vector>

#include "dtrain/ddp/data_parallel.h"
#include "dtrain/models/toy_cnn.h"

namespace {

using dtrain::ddp::DataParallel;
using dtrain::ddp::DataParallelOptions;

const c10::Device kCuda0(c10::kCUDA, 0);

class DataParallelCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) {
      GTEST_SKIP() << "no CUDA device visible";
    }
  }
};

torch::nn::Sequential make_net() {
  at::manual_seed(5);
  return torch::nn::Sequential(torch::nn::Linear(12, 32), torch::nn::Tanh(),
                               torch::nn::Linear(32, 32), torch::nn::ReLU(),
                               torch::nn::Linear(32, 3));
}

double max_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kCPU) - b.to(at::kCPU)).abs().max().item<double>();
}

// Runs `options` on a 10-sample batch (not divisible by every device count)
// and compares with the module alone on cuda:0.
void expect_equal_to_one_device(DataParallelOptions options, bool input_on_cpu) {
  auto reference = make_net();
  reference->to(kCuda0);
  DataParallel<torch::nn::Sequential> model(make_net(), std::move(options));

  at::manual_seed(9);
  const at::Tensor x = at::randn({10, 12});
  const at::Tensor upstream = at::randn({10, 3});
  const at::Tensor y = model(input_on_cpu ? x : x.to(kCuda0));
  const at::Tensor y_ref = reference->forward(x.to(kCuda0));
  EXPECT_EQ(y.device(), model.output_device());
  EXPECT_LT(max_diff(y, y_ref), 1e-5);

  (y * upstream.to(y.device())).sum().backward();
  (y_ref * upstream.to(kCuda0)).sum().backward();
  const auto got = model.module()->parameters();
  const auto want = reference->parameters();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].grad().defined()) << "parameter " << i;
    EXPECT_EQ(got[i].device(), kCuda0);
    EXPECT_LT(max_diff(got[i].grad(), want[i].grad()), 1e-5) << "parameter " << i;
  }
}

TEST_F(DataParallelCuda, EveryVisibleGpuEqualsOneDevice) {
  expect_equal_to_one_device(DataParallelOptions(), /*input_on_cpu=*/false);
}

TEST_F(DataParallelCuda, SeveralCopiesEqualOneDevice) {
  // Two copies on each visible GPU: scatter, replicate, parallel apply,
  // gather and the summed backward all run even on a one-GPU machine.
  std::vector<c10::Device> devices;
  for (int64_t i = 0; i < dtrain::ddp::visible_cuda_devices(); ++i) {
    devices.emplace_back(c10::kCUDA, static_cast<c10::DeviceIndex>(i));
    devices.emplace_back(c10::kCUDA, static_cast<c10::DeviceIndex>(i));
  }
  expect_equal_to_one_device(DataParallelOptions().devices(devices), /*input_on_cpu=*/true);
}

TEST_F(DataParallelCuda, OutputsGatherOnTheCpuWhenAsked) {
  expect_equal_to_one_device(
      DataParallelOptions().devices({{kCuda0, kCuda0}}).output_device(c10::Device(c10::kCPU)),
      /*input_on_cpu=*/false);
}

// The seed's model, not only a Sequential: dtrain's models are Cloneable,
// so DataParallel can copy them (tests/unit/test_model_clone.cpp checks
// the copies on the CPU).
TEST_F(DataParallelCuda, CopiesOfTheToyCnnEqualOneDevice) {
  auto make_cnn = [] {
    at::manual_seed(5);
    return dtrain::models::ToyCnn(dtrain::models::ToyCnnOptions().in_channels(1));
  };
  auto reference = make_cnn();
  reference->to(kCuda0);
  DataParallel<dtrain::models::ToyCnn> model(make_cnn(),
                                             DataParallelOptions().devices({{kCuda0, kCuda0}}));
  at::manual_seed(9);
  const at::Tensor images = at::randn({6, 1, 32, 32});
  const at::Tensor y = model(images);
  const at::Tensor y_ref = reference->forward(images.to(kCuda0));
  EXPECT_LT(max_diff(y, y_ref), 1e-5);
  y.sum().backward();
  y_ref.sum().backward();
  const auto got = model.module()->parameters();
  const auto want = reference->parameters();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].grad().defined()) << "parameter " << i;
    EXPECT_LT(max_diff(got[i].grad(), want[i].grad()), 1e-4) << "parameter " << i;
  }
}

}  // namespace
