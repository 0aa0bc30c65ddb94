// CUDA tensors on a Gloo group, as torch.distributed's Gloo takes them for
// its common collectives: broadcast, all_reduce, reduce and all_gather stage
// them through the host (Note [Tensors on a device the backend does not
// move]), DDP trains a CUDA model over Gloo, and the other ops refuse CUDA
// tensors by name. World size 1, in this process. Skips without a visible
// CUDA device.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/dist/init.h"
#include "expect_error.h"
#include "multi_process.h"

namespace {

using namespace std::chrono_literals;
namespace dist = dtrain::dist;

class GlooCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!at::hasCUDA()) {
      GTEST_SKIP() << "no CUDA device visible";
    }
    dist::init_process_group(
        {.backend = "gloo",
         .init_method = "tcp://127.0.0.1:" + std::to_string(dtrain::testing::free_port()),
         .rank = 0,
         .world_size = 1,
         .timeout = 60s});
  }
  void TearDown() override {
    if (dist::is_initialized()) {
      dist::destroy_process_group();
    }
  }
  const at::TensorOptions cuda_ = at::TensorOptions().device(at::kCUDA, 0);
};

TEST_F(GlooCuda, CommonCollectivesStageThroughTheHost) {
  at::Tensor t = at::arange(6, cuda_.dtype(at::kFloat)).view({2, 3}).t();  // not contiguous
  const at::Tensor expected = t.clone();
  dist::all_reduce(t, dist::ReduceOp::kMax);
  dist::broadcast(t, 0);
  dist::reduce(t, 0);
  EXPECT_TRUE(t.is_cuda());
  EXPECT_TRUE(at::equal(t, expected));
  std::vector<at::Tensor> gathered = {at::zeros({3, 2}, cuda_)};
  dist::all_gather(gathered, t);
  EXPECT_TRUE(gathered[0].is_cuda());
  EXPECT_TRUE(at::equal(gathered[0], expected));
  // async_op: the staged call has finished when it returns.
  auto work = dist::all_reduce(t, dist::ReduceOp::kSum, nullptr, /*async_op=*/true);
  EXPECT_TRUE(work->is_completed());
}

TEST_F(GlooCuda, OtherOpsAndMixedDevicesAreRefusedByName) {
  at::Tensor t = at::ones({4}, cuda_);
  std::vector<at::Tensor> gathered = {at::zeros({4}, cuda_)};
  dtrain::testing::expect_error([&] { dist::gather(t, gathered, 0); },
                                "gloo takes CPU tensors, got one on cuda:0 (gloo stages CUDA "
                                "tensors through the host for broadcast, all_reduce, reduce "
                                "and all_gather only");
  std::vector<at::Tensor> on_cpu = {at::zeros({4})};
  dtrain::testing::expect_error([&] { dist::all_gather(on_cpu, t); },
                                "mixes CUDA and CPU tensors; use one device per call");
}

TEST_F(GlooCuda, DdpTrainsACudaModel) {
  torch::manual_seed(0);
  torch::nn::Linear model(8, 2);
  model->to(at::Device(at::kCUDA, 0));
  dtrain::ddp::DistributedDataParallel<torch::nn::Linear> ddp(model);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  const at::Tensor x = at::randn({16, 8}, cuda_);
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

}  // namespace
