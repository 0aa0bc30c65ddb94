// DataParallel's device rules (with pretended GPU counts) and its one-device
// path on the CPU; the multi-GPU path is tests/gpu/test_data_parallel_cuda.cpp.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <string>

#include "dtrain/ddp/data_parallel.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"

namespace {

using dtrain::ddp::data_parallel_devices;
using dtrain::ddp::DataParallel;
using dtrain::ddp::DataParallelOptions;
using dtrain::testing::expect_error;

const c10::Device kCpu(c10::kCPU);
c10::Device cuda(int index) {
  return {c10::kCUDA, static_cast<c10::DeviceIndex>(index)};
}

TEST(DataParallelDevices, DefaultIsEveryGpuElseTheCpu) {
  EXPECT_EQ(data_parallel_devices({}, 0), std::vector<c10::Device>{kCpu});
  EXPECT_EQ(data_parallel_devices({}, 3), (std::vector<c10::Device>{cuda(0), cuda(1), cuda(2)}));
  EXPECT_EQ(data_parallel_devices(DataParallelOptions().num_devices(2), 4),
            (std::vector<c10::Device>{cuda(0), cuda(1)}));
  EXPECT_EQ(data_parallel_devices(DataParallelOptions().devices({{cuda(1), cuda(0)}}), 2),
            (std::vector<c10::Device>{cuda(1), cuda(0)}));
  // One copy per entry, so one GPU can hold several.
  EXPECT_EQ(data_parallel_devices(DataParallelOptions().devices({{cuda(0), cuda(0)}}), 1).size(),
            2u);
  EXPECT_EQ(data_parallel_devices(DataParallelOptions().devices({{kCpu}}), 2),
            std::vector<c10::Device>{kCpu});
}

TEST(DataParallelDevices, MissingDevicesAreErrorsSayingHowManyExist) {
  expect_error([] { data_parallel_devices(DataParallelOptions().num_devices(3), 2); },
               "num_devices is 3 but only 2 CUDA devices are visible");
  expect_error([] { data_parallel_devices(DataParallelOptions().num_devices(1), 0); },
               "num_devices is 1 but only 0 CUDA devices are visible");
  expect_error([] { data_parallel_devices(DataParallelOptions().num_devices(0), 2); },
               "num_devices must be >= 1, got 0");
  expect_error(
      [] {
        data_parallel_devices(DataParallelOptions().devices({{cuda(0), cuda(2)}}), 2);
      },
      "device cuda:2 was requested but only 2 CUDA devices are visible");
  expect_error([] { data_parallel_devices(DataParallelOptions().devices({{cuda(0)}}), 0); },
               "only 0 CUDA devices are visible");
  expect_error(
      [] {
        data_parallel_devices(DataParallelOptions().devices({{kCpu, cuda(0)}}), 1);
      },
      "the CPU can only be used alone");
  expect_error(
      [] { data_parallel_devices(DataParallelOptions().devices(std::vector<c10::Device>{}), 1); },
      "devices must not be empty");
  expect_error(
      [] { data_parallel_devices(DataParallelOptions().devices({{c10::Device(c10::kCUDA)}}), 1); },
      "needs an index");
  expect_error(
      [] { data_parallel_devices(DataParallelOptions().num_devices(1).devices({{cuda(0)}}), 1); },
      "not both");
  expect_error([] { data_parallel_devices(DataParallelOptions().output_device(cuda(1)), 1); },
               "output_device cuda:1 was requested but only 1 CUDA device is visible");
}

TEST(DataParallel, OnTheCpuItRunsTheModuleDirectly) {
  at::manual_seed(3);
  torch::nn::Sequential net(torch::nn::Linear(5, 8), torch::nn::Tanh(), torch::nn::Linear(8, 2));
  auto reference = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(net->clone());
  DataParallel<torch::nn::Sequential> model(net, DataParallelOptions().devices({{kCpu}}));
  EXPECT_EQ(model.devices(), std::vector<c10::Device>{kCpu});
  EXPECT_EQ(model.output_device(), kCpu);

  const at::Tensor x = at::randn({6, 5});
  const at::Tensor y = model(x);
  const at::Tensor y_ref = reference->forward(x);
  EXPECT_TRUE(at::allclose(y, y_ref));
  y.sum().backward();
  y_ref.sum().backward();
  // The gradients land in the wrapped module's own parameters.
  const auto got = model.module()->parameters();
  const auto want = reference->parameters();
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].grad().defined()) << "parameter " << i;
    EXPECT_TRUE(at::allclose(got[i].grad(), want[i].grad())) << "parameter " << i;
  }
}

TEST(DataParallel, RequestingMoreGpusThanVisibleIsAnError) {
  const int64_t visible = dtrain::ddp::visible_cuda_devices();
  torch::nn::Sequential net(torch::nn::Linear(2, 2));
  expect_error(
      [&] {
        DataParallel<torch::nn::Sequential>(net, DataParallelOptions().num_devices(visible + 1));
      },
      "num_devices is " + std::to_string(visible + 1) + " but only " + std::to_string(visible));
  if (visible == 0) {
    // Without a GPU the default is the CPU.
    DataParallel<torch::nn::Sequential> model(net);
    EXPECT_EQ(model.devices(), std::vector<c10::Device>{kCpu});
  }
}

}  // namespace
