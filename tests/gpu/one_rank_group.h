// What the GPU tests of a backend on one GPU share: a default process group
// of one rank in this process (NCCL refuses two ranks on one device), and
// DDP training a small CUDA model over it.
#pragma once

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <string>

#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/dist/init.h"
#include "dtrain/util/process_setup.h"
#include "multi_process.h"

namespace dtrain::testing {

// A fixture whose tests run on a one-rank group of `backend`; skips,
// saying why, where no CUDA device is visible.
class OneRankCudaGroup : public ::testing::Test {
 protected:
  explicit OneRankCudaGroup(std::string backend) : backend_(std::move(backend)) {}

  void SetUp() override {
    if (!at::hasCUDA()) {
      GTEST_SKIP() << "no CUDA device visible";
    }
    // A crash on the GPU machine is traced in the run's log, as in dtrain's programs.
    util::set_up_process(util::ProcessSetup().logging(false).retain_freed_host_memory(false));
    dist::init_process_group({.backend = backend_,
                              .init_method = "tcp://127.0.0.1:" + std::to_string(free_port()),
                              .rank = 0,
                              .world_size = 1,
                              .timeout = std::chrono::seconds(60)});
  }
  void TearDown() override {
    if (dist::is_initialized()) {
      dist::destroy_process_group();
    }
  }
  static at::TensorOptions cuda(at::ScalarType dtype = at::kFloat) {
    return at::TensorOptions().dtype(dtype).device(at::kCUDA, 0);
  }

 private:
  std::string backend_;
};

// DDP over the default group trains a linear model on the GPU: the loss
// falls over five SGD steps and the gradients stay on the GPU.
inline void expect_ddp_trains_a_cuda_model() {
  torch::manual_seed(0);
  torch::nn::Linear model(8, 2);
  model->to(at::Device(at::kCUDA, 0));
  ddp::DistributedDataParallel<torch::nn::Linear> ddp(model);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  const at::Tensor x = at::randn({16, 8}, at::TensorOptions().device(at::kCUDA, 0));
  double first_loss = 0;
  double last_loss = 0;
  for (int step = 0; step < 5; ++step) {
    optimizer.zero_grad();
    at::Tensor loss = ddp(x).square().mean();
    loss.backward();
    optimizer.step();
    (step == 0 ? first_loss : last_loss) = loss.item<double>();
  }
  EXPECT_LT(last_loss, first_loss);
  EXPECT_TRUE(model->weight.grad().is_cuda());
}

}  // namespace dtrain::testing
