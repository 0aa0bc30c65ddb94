// SyncBatchNorm in one process (a plain BatchNorm there) and
// convert_sync_batchnorm; the multi-rank equivalence is
// tests/dist/test_sync_batch_norm.cpp.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <string>

#include "dtrain/ddp/sync_batch_norm.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"

namespace {

using dtrain::ddp::convert_sync_batchnorm;
using dtrain::ddp::SyncBatchNorm;
using dtrain::ddp::SyncBatchNormImpl;
using dtrain::ddp::SyncBatchNormOptions;
using dtrain::testing::expect_error;

TEST(SyncBatchNorm, WithoutAGroupItIsBatchNorm) {
  at::manual_seed(0);
  torch::nn::BatchNorm2d bn(torch::nn::BatchNormOptions(4).momentum(0.3));
  SyncBatchNorm sync(SyncBatchNormOptions(4).momentum(0.3));
  for (int step = 0; step < 2; ++step) {
    const at::Tensor input = at::randn({5, 4, 3, 3}) * 2 + 1;
    at::Tensor a = input.clone().requires_grad_(true);
    at::Tensor b = input.clone().requires_grad_(true);
    const at::Tensor ya = bn(a);
    const at::Tensor yb = sync(b);
    EXPECT_TRUE(at::allclose(ya, yb));
    (ya * ya).sum().backward();
    (yb * yb).sum().backward();
    EXPECT_TRUE(at::allclose(a.grad(), b.grad()));
    EXPECT_TRUE(at::allclose(bn->weight.grad(), sync->weight.grad()));
    EXPECT_TRUE(at::allclose(bn->running_var, sync->running_var));
  }
  bn->eval();
  sync->eval();
  const at::Tensor input = at::randn({2, 4, 3, 3});
  EXPECT_TRUE(at::allclose(bn(input), sync(input)));
}

TEST(SyncBatchNorm, ParametersAndBuffersHaveBatchNormNames) {
  SyncBatchNorm sync(8);
  EXPECT_EQ(sync->named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(sync->named_buffers().keys(),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  SyncBatchNorm bare(SyncBatchNormOptions(8).affine(false).track_running_stats(false));
  EXPECT_TRUE(bare->parameters().empty());
  // clone() gives fresh tensors holding the same values.
  {
    at::NoGradGuard no_grad;
    sync->weight.fill_(3);
  }
  auto copy = std::dynamic_pointer_cast<SyncBatchNormImpl>(sync->clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(at::equal(copy->weight, sync->weight));
  EXPECT_NE(copy->weight.data_ptr(), sync->weight.data_ptr());
}

TEST(SyncBatchNorm, BadInputsAndOptionsAreNamed) {
  SyncBatchNorm sync(3);
  expect_error([&] { sync(at::randn({4})); }, "at least 2 dimensions");
  expect_error([&] { sync(at::randn({2, 5, 4})); }, "expected 3 channels in dimension 1");
  expect_error([] { SyncBatchNorm(0); }, "num_features must be positive, got 0");
  expect_error([] { SyncBatchNorm(SyncBatchNormOptions(2).momentum(1.5)); },
               "momentum must be in [0, 1] or nullopt, got 1.5");
}

// A custom module whose BatchNorm sits in a Sequential member. (A
// Sequential cannot hold another Sequential directly: its forward is a
// template, which AnyModule cannot store.)
struct HeadImpl : torch::nn::Module {
  HeadImpl()
      : body(register_module("body", torch::nn::Sequential(torch::nn::Linear(4 * 3 * 3, 6),
                                                           torch::nn::BatchNorm1d(6)))) {}
  at::Tensor forward(const at::Tensor& x) { return body->forward(x); }
  torch::nn::Sequential body;
};
TORCH_MODULE(Head);

// A model built the usual way: BatchNorms in Sequentials, one nested in a
// custom module.
torch::nn::Sequential make_net() {
  return torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 4, 3)),
                               torch::nn::BatchNorm2d(4), torch::nn::ReLU(), torch::nn::Flatten(),
                               Head());
}

TEST(ConvertSyncBatchNorm, ReplacesBatchNormsInSequentialsSharingTheirTensors) {
  at::manual_seed(1);
  auto net = make_net();
  net->train();
  const at::Tensor x = at::randn({7, 2, 5, 5});
  net->forward(x);  // moves the running statistics away from their start
  std::vector<at::Tensor> before = net->parameters();
  std::vector<at::Tensor> buffers_before = net->buffers();
  net->eval();
  const at::Tensor y_before = net->forward(x);

  EXPECT_EQ(convert_sync_batchnorm(net), 2);

  // Every slot that forward calls now holds a SyncBatchNorm.
  EXPECT_TRUE(net[1]->as<SyncBatchNormImpl>() != nullptr);
  // The member the custom module's forward calls is the converted Sequential.
  auto head = net[4]->as<HeadImpl>();
  ASSERT_TRUE(head);
  EXPECT_TRUE(head->body[1]->as<SyncBatchNormImpl>() != nullptr);
  EXPECT_TRUE(std::dynamic_pointer_cast<SyncBatchNormImpl>(net->named_children()["1"]) != nullptr);
  EXPECT_FALSE(net[1]->is_training());  // kept the BatchNorm's mode
  // The very same tensors (an optimizer built on them keeps working).
  const auto after = net->parameters();
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_TRUE(after[i].is_same(before[i])) << "parameter " << i;
  }
  const auto buffers_after = net->buffers();
  ASSERT_EQ(buffers_after.size(), buffers_before.size());
  for (std::size_t i = 0; i < buffers_after.size(); ++i) {
    EXPECT_TRUE(buffers_after[i].is_same(buffers_before[i])) << "buffer " << i;
  }
  EXPECT_TRUE(at::allclose(net->forward(x), y_before));
  // Converting again finds nothing left to replace.
  EXPECT_EQ(convert_sync_batchnorm(net), 0);
}

// A custom module holding a BatchNorm as a member: forward calls that
// member, which conversion cannot repoint.
struct BlockImpl : torch::nn::Module {
  BlockImpl()
      : bn(register_module("bn", torch::nn::BatchNorm1d(3))),
        body(register_module(
            "body", torch::nn::Sequential(torch::nn::Linear(3, 3), torch::nn::BatchNorm1d(3)))) {}
  at::Tensor forward(const at::Tensor& x) { return body->forward(bn(x)); }
  torch::nn::BatchNorm1d bn;
  torch::nn::Sequential body;
};
TORCH_MODULE(Block);

TEST(ConvertSyncBatchNorm, RefusesBatchNormMembersAndChangesNothing) {
  auto net = torch::nn::Sequential(Block(), torch::nn::BatchNorm1d(3));
  expect_error([&] { convert_sync_batchnorm(net); },
               "cannot replace the BatchNorm at '0.bn': only children of a torch::nn::Sequential");
  EXPECT_TRUE(net[1]->as<torch::nn::BatchNorm1dImpl>() != nullptr);
  EXPECT_TRUE(net[0]->as<BlockImpl>()->body[1]->as<torch::nn::BatchNorm1dImpl>() != nullptr);
  expect_error([] { convert_sync_batchnorm(torch::nn::BatchNorm2d(3)); },
               "the module is itself a BatchNorm");
}

}  // namespace
