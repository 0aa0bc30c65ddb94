// The models' fused batch norm + ReLU: where the set abstraction takes it
// (the autograd graph shows which op ran), and that it gives what the
// modules give: outputs, gradients, running statistics, batch counts.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/ddp/sync_batch_norm.h"
#include "dtrain/models/feature_propagation.h"
#include "dtrain/models/set_abstraction.h"
#include "expect_error.h"
#include "fused_norm_relu.h"

namespace {

using dtrain::models::FeaturePropagation;
using dtrain::models::FeaturePropagationOptions;
using dtrain::models::GroupingScale;
using dtrain::models::SetAbstraction;
using dtrain::models::SetAbstractionOptions;

// How many nodes of the autograd graph behind `output` are the fused op.
int fused_nodes(const at::Tensor& output) {
  std::unordered_set<torch::autograd::Node*> seen;
  std::function<int(const std::shared_ptr<torch::autograd::Node>&)> count =
      [&](const std::shared_ptr<torch::autograd::Node>& node) {
        if (!node || !seen.insert(node.get()).second) {
          return 0;
        }
        int found = node->name().find("BatchNormReluFunction") != std::string::npos ? 1 : 0;
        for (const auto& edge : node->next_edges()) {
          found += count(edge.function);
        }
        return found;
      };
  return count(output.grad_fn());
}

SetAbstractionOptions two_scales() {
  // Three batch norm + ReLU pairs: two in the first scale, one in the second.
  return SetAbstractionOptions().npoint(12).in_channels(6).scales(
      {GroupingScale{0.3, 8, {16, 8}}, GroupingScale{0.6, 4, {5}}});
}

void copy_state(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto source = from.named_parameters();
  for (auto& item : to.named_parameters()) {
    item.value().copy_(source[item.key()]);
  }
  auto buffers = from.named_buffers();
  for (auto& item : to.named_buffers()) {
    item.value().copy_(buffers[item.key()]);
  }
}

// The same two-scale layer twice, in the same state: one fusing its batch
// norm + ReLU pairs, one running the modules.
std::pair<SetAbstraction, SetAbstraction> fused_and_separate() {
  SetAbstraction fused(two_scales());
  SetAbstraction separate(SetAbstractionOptions(two_scales()).fused_norm_relu(false));
  copy_state(*fused, *separate);
  return {fused, separate};
}

TEST(FusedNormRelu, SetAbstractionFusesEveryPairWhileTraining) {
  torch::manual_seed(1);
  const at::Tensor xyz = at::rand({2, 40, 3});
  const at::Tensor features = at::randn({2, 6, 40});
  SetAbstraction fused(two_scales());
  EXPECT_EQ(fused_nodes(fused(xyz, features.clone().requires_grad_()).features), 3);

  SetAbstraction separate(SetAbstractionOptions(two_scales()).fused_norm_relu(false));
  EXPECT_EQ(fused_nodes(separate(xyz, features.clone().requires_grad_()).features), 0);
  SetAbstraction channel_major(SetAbstractionOptions(two_scales()).channels_last(false));
  EXPECT_EQ(fused_nodes(channel_major(xyz, features.clone().requires_grad_()).features), 0);

  fused->eval();  // running statistics: the modules' own path
  EXPECT_EQ(fused_nodes(fused(xyz, features.clone().requires_grad_()).features), 0);
}

TEST(FusedNormRelu, SyncBatchNormKeepsItsOwnForward) {
  torch::manual_seed(2);
  SetAbstraction layer(two_scales());
  ASSERT_EQ(dtrain::ddp::convert_sync_batchnorm(layer), 3);
  // One process: SyncBatchNorm normalises over the local batch, through
  // its own forward, not the fused op.
  const auto out = layer(at::rand({2, 40, 3}), at::randn({2, 6, 40}).requires_grad_());
  EXPECT_EQ(fused_nodes(out.features), 0);
}

TEST(FusedNormRelu, SetAbstractionMatchesTheModules) {
  torch::manual_seed(3);
  const at::Tensor xyz = at::rand({3, 50, 3});
  const at::Tensor features = at::randn({3, 6, 50});
  auto [fused, separate] = fused_and_separate();
  for (int step = 0; step < 2; ++step) {
    const at::Tensor a = features.clone().requires_grad_();
    const at::Tensor b = features.clone().requires_grad_();
    const auto out_fused = fused(xyz, a);
    const auto out_separate = separate(xyz, b);
    EXPECT_EQ(out_fused.features.strides(), out_separate.features.strides());
    EXPECT_TRUE(at::allclose(out_fused.features, out_separate.features, 1e-5, 1e-6));
    const at::Tensor probe = at::randn(out_fused.features.sizes());
    (out_fused.features * probe).sum().backward();
    (out_separate.features * probe).sum().backward();
    EXPECT_TRUE(at::allclose(a.grad(), b.grad(), 1e-5, 1e-6));
  }
  auto separate_params = separate->named_parameters();
  for (const auto& item : fused->named_parameters()) {
    SCOPED_TRACE(item.key());
    EXPECT_TRUE(at::allclose(item.value().grad(), separate_params[item.key()].grad(), 1e-4, 1e-5));
  }
  auto separate_buffers = separate->named_buffers();
  for (const auto& item : fused->named_buffers()) {
    SCOPED_TRACE(item.key());
    EXPECT_TRUE(at::allclose(item.value(), separate_buffers[item.key()], 1e-5, 1e-6));
  }
  EXPECT_EQ(fused->named_buffers()["mlp0.1.num_batches_tracked"].item<int64_t>(), 2);
}

// Under CPU bf16 autocast the convolutions hand bfloat16 to the batch norms
// beside their float32 parameters: the fused op takes those pairs too, and
// gives the modules' values up to bfloat16 rounding, with float32
// parameter gradients.
TEST(FusedNormRelu, SetAbstractionFusesUnderBf16Autocast) {
  torch::manual_seed(5);
  const at::Tensor xyz = at::rand({3, 50, 3});
  const at::Tensor features = at::randn({3, 6, 50});
  auto [fused, separate] = fused_and_separate();
  const at::Tensor a = features.clone().requires_grad_();
  const at::Tensor b = features.clone().requires_grad_();
  at::Tensor out_fused, out_separate;
  {
    dtrain::amp::AutocastGuard autocast(c10::DeviceType::CPU);
    out_fused = fused(xyz, a).features;
    out_separate = separate(xyz, b).features;
  }
  EXPECT_EQ(fused_nodes(out_fused), 3);
  ASSERT_EQ(out_fused.scalar_type(), at::kBFloat16);
  ASSERT_EQ(out_separate.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::allclose(out_fused.to(at::kFloat), out_separate.to(at::kFloat), 2e-2, 2e-2));
  const at::Tensor probe = at::randn(out_fused.sizes());
  (out_fused.to(at::kFloat) * probe).sum().backward();
  (out_separate.to(at::kFloat) * probe).sum().backward();
  EXPECT_TRUE(at::allclose(a.grad(), b.grad(), 5e-2, 5e-2));
  auto separate_params = separate->named_parameters();
  for (const auto& item : fused->named_parameters()) {
    SCOPED_TRACE(item.key());
    ASSERT_EQ(item.value().grad().scalar_type(), at::kFloat);
    const at::Tensor want = separate_params[item.key()].grad();
    EXPECT_LE((item.value().grad() - want).abs().max().item<double>(),
              5e-2 * (want.abs().max().item<double>() + 1e-3));
  }
  auto separate_buffers = separate->named_buffers();
  for (const auto& item : fused->named_buffers()) {
    SCOPED_TRACE(item.key());
    EXPECT_TRUE(at::allclose(item.value(), separate_buffers[item.key()], 1e-2, 1e-3));
  }
}

// A stack of conv -> batch norm -> ReLU with `norm`'s options, run through
// the fusing forward and through its own, from the same state, three times.
void expect_stack_matches(const torch::nn::BatchNormOptions& norm, bool expect_fused) {
  SCOPED_TRACE(::testing::Message() << "momentum " << norm.momentum().value_or(-1) << " affine "
                                    << norm.affine() << " running " << norm.track_running_stats());
  auto make = [&] {
    torch::nn::Sequential stack(torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 6, 1).bias(false)),
                                torch::nn::BatchNorm2d(norm),
                                torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
    return stack;
  };
  torch::nn::Sequential fused = make();
  torch::nn::Sequential plain = make();
  copy_state(*fused, *plain);
  for (int step = 0; step < 3; ++step) {
    const at::Tensor x =
        at::randn({2, 4, 5, 3}).contiguous(at::MemoryFormat::ChannelsLast).requires_grad_();
    const at::Tensor y_fused = dtrain::models::detail::forward_fusing_norm_relu(fused, x);
    const at::Tensor y_plain = plain->forward(x);
    EXPECT_EQ(fused_nodes(y_fused), expect_fused ? 1 : 0);
    EXPECT_TRUE(at::allclose(y_fused, y_plain, 1e-5, 1e-6));
  }
  auto plain_buffers = plain->named_buffers();
  for (const auto& item : fused->named_buffers()) {
    SCOPED_TRACE(item.key());
    EXPECT_TRUE(at::allclose(item.value(), plain_buffers[item.key()], 1e-5, 1e-6));
  }
}

TEST(FusedNormRelu, RunningStatisticsFollowTheModuleOptions) {
  torch::manual_seed(4);
  expect_stack_matches(torch::nn::BatchNormOptions(6), true);
  expect_stack_matches(torch::nn::BatchNormOptions(6).momentum(0.3), true);
  // A cumulative average: momentum 1 / num_batches_tracked.
  expect_stack_matches(torch::nn::BatchNormOptions(6).momentum(std::nullopt), true);
  expect_stack_matches(torch::nn::BatchNormOptions(6).track_running_stats(false), true);
  expect_stack_matches(torch::nn::BatchNormOptions(6).affine(false), false);
}

// Feature propagation's MLP on rows (one dense point's channels per row:
// 1x1 convolutions as matrix products, batch norm + ReLU fused) against the
// channel-major Conv1d stack it replaces, from the same state, over two
// training steps: outputs, input and parameter gradients, running
// statistics; and the output keeps each point's channels innermost.
TEST(FusedNormRelu, FeaturePropagationOnRowsMatchesTheChannelMajorStack) {
  torch::manual_seed(6);
  const auto options = FeaturePropagationOptions().in_channels(5 + 4).mlp({7, 6});
  FeaturePropagation rows(options);
  FeaturePropagation channel_major(FeaturePropagationOptions(options).channels_last(false));
  FeaturePropagation unfused(FeaturePropagationOptions(options).fused_norm_relu(false));
  copy_state(*rows, *channel_major);
  copy_state(*rows, *unfused);
  const at::Tensor dense = at::rand({2, 30, 3});
  const at::Tensor sparse = at::rand({2, 8, 3});
  for (int step = 0; step < 2; ++step) {
    const at::Tensor skip = at::randn({2, 4, 30});
    const at::Tensor sparse_features = at::randn({2, 5, 8});
    std::vector<at::Tensor> inputs, outputs;
    for (FeaturePropagation* fp : {&rows, &channel_major, &unfused}) {
      inputs.push_back(sparse_features.clone().requires_grad_());
      outputs.push_back((*fp)(dense, sparse, skip, inputs.back()));
    }
    EXPECT_EQ(fused_nodes(outputs[0]), 2);
    EXPECT_EQ(fused_nodes(outputs[1]), 0);
    EXPECT_EQ(fused_nodes(outputs[2]), 0);
    ASSERT_EQ(outputs[0].sizes(), (std::vector<int64_t>{2, 6, 30}));
    EXPECT_EQ(outputs[0].stride(1), 1) << "channels innermost";
    const at::Tensor probe = at::randn(outputs[0].sizes());
    for (size_t i = 0; i < outputs.size(); ++i) {
      (outputs[i] * probe).sum().backward();
    }
    for (size_t i = 1; i < outputs.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_TRUE(at::allclose(outputs[0], outputs[i], 1e-5, 1e-6));
      EXPECT_TRUE(at::allclose(inputs[0].grad(), inputs[i].grad(), 1e-4, 1e-6));
    }
  }
  for (FeaturePropagation* other : {&channel_major, &unfused}) {
    auto params = (*other)->named_parameters();
    for (const auto& item : rows->named_parameters()) {
      SCOPED_TRACE(item.key());
      EXPECT_TRUE(at::allclose(item.value().grad(), params[item.key()].grad(), 1e-4, 1e-5));
    }
    auto buffers = (*other)->named_buffers();
    for (const auto& item : rows->named_buffers()) {
      SCOPED_TRACE(item.key());
      EXPECT_TRUE(at::allclose(item.value(), buffers[item.key()], 1e-5, 1e-6));
    }
  }
  // Evaluation: the running statistics, the modules' own batch norms on rows.
  rows->eval();
  channel_major->eval();
  const at::Tensor skip = at::randn({2, 4, 30});
  const at::Tensor sparse_features = at::randn({2, 5, 8});
  const at::Tensor evaluated = rows(dense, sparse, skip, sparse_features);
  EXPECT_EQ(fused_nodes(evaluated), 0);
  EXPECT_TRUE(
      at::allclose(evaluated, channel_major(dense, sparse, skip, sparse_features), 1e-5, 1e-6));
}

// Rows take only what is a matrix product over rows.
TEST(FusedNormRelu, RowsRefuseAConvolutionWiderThanOnePoint) {
  torch::nn::Sequential wide(torch::nn::Conv1d(torch::nn::Conv1dOptions(3, 4, 3)));
  dtrain::testing::expect_error<c10::Error>(
      [&] {
        dtrain::models::detail::forward_on_rows(wide, at::randn({5, 3}), true);
      },
      "only 1x1 convolutions run on rows, got kernel size 3, stride 1");
}

}  // namespace
