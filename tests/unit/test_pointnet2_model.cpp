// dtrain::models::SetAbstraction and PointNet2Cls: the layer against a
// brute-force grouping, the presets' shapes, the checks, mixed precision,
// and that the classifier learns.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/kernels/pointnet2.h"
#include "dtrain/models/pointnet2_cls.h"
#include "dtrain/models/set_abstraction.h"
#include "expect_error.h"

namespace {

using dtrain::testing::expect_error;

using dtrain::models::GroupingScale;
using dtrain::models::pointnet2_cls_preset;
using dtrain::models::PointNet2Cls;
using dtrain::models::PointNet2ClsOptions;
using dtrain::models::SetAbstraction;
using dtrain::models::SetAbstractionOptions;

// The shared MLP of one scale of `layer`, as registered ("mlp0", "mlp1", ...).
torch::nn::Sequential mlp_of(SetAbstraction& layer, int scale) {
  auto module = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(
      layer->named_children()["mlp" + std::to_string(scale)]);
  EXPECT_TRUE(module) << "no mlp" << scale;
  return torch::nn::Sequential(module);
}

// The neighbourhood of one centre by definition: the first `nsample` points
// in index order strictly inside the ball, padded with the first of them.
std::vector<int64_t> ball_by_definition(const at::Tensor& cloud, const at::Tensor& centre,
                                        double radius, int64_t nsample) {
  const at::Tensor d = cloud - centre;
  const at::Tensor dist2 = d.select(1, 0) * d.select(1, 0) + d.select(1, 1) * d.select(1, 1) +
                           d.select(1, 2) * d.select(1, 2);
  const auto r2 = static_cast<float>(radius * radius);
  std::vector<int64_t> found;
  for (int64_t i = 0; i < cloud.size(0) && static_cast<int64_t>(found.size()) < nsample; ++i) {
    if (dist2[i].item<float>() < r2) {
      found.push_back(i);
    }
  }
  EXPECT_FALSE(found.empty()) << "a centre taken from the cloud has an empty ball";
  found.resize(nsample, found.front());
  return found;
}

TEST(SetAbstraction, MatchesGroupingByDefinition) {
  torch::manual_seed(1);
  const int64_t batch = 2, n = 64, channels = 4, npoint = 8, nsample = 5;
  const double radius = 0.45;
  const at::Tensor xyz = at::rand({batch, n, 3});
  const at::Tensor features = at::randn({batch, channels, n});
  SetAbstraction layer(SetAbstractionOptions().npoint(npoint).in_channels(channels).scales(
      {GroupingScale{radius, nsample, {8, 6}}}));
  layer->eval();  // batch norm from running statistics: each group is computed alone below
  const auto out = layer(xyz, features);
  ASSERT_EQ(out.xyz.sizes(), (std::vector<int64_t>{batch, npoint, 3}));
  ASSERT_EQ(out.features.sizes(), (std::vector<int64_t>{batch, 6, npoint}));

  const at::Tensor sampled = dtrain::kernels::furthest_point_sample(xyz, npoint);
  auto mlp = mlp_of(layer, 0);
  torch::NoGradGuard no_grad;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t m = 0; m < npoint; ++m) {
      const at::Tensor centre = xyz[b][sampled[b][m].item<int64_t>()];
      EXPECT_TRUE(at::equal(out.xyz[b][m], centre)) << "centre " << m << " of cloud " << b;
      const auto ball = ball_by_definition(xyz[b], centre, radius, nsample);
      const at::Tensor index = at::tensor(ball, at::kLong);
      // (3 + C, nsample): relative coordinates first, then features.
      const at::Tensor group = at::cat(
          {(xyz[b].index_select(0, index) - centre).t(), features[b].index_select(1, index)});
      const at::Tensor expected = mlp->forward(group.view({1, 3 + channels, 1, nsample})).amax(-1);
      EXPECT_TRUE(at::allclose(out.features[b].select(1, m), expected.view({6}), 1e-5, 1e-6))
          << "cloud " << b << ", centre " << m;
    }
  }
}

TEST(SetAbstraction, GroupAllPoolsTheMlpOverEveryPoint) {
  torch::manual_seed(2);
  const at::Tensor xyz = at::randn({3, 20, 3});
  const at::Tensor features = at::randn({3, 2, 20});
  SetAbstraction layer(
      SetAbstractionOptions().npoint(0).in_channels(2).scales({GroupingScale{0, 0, {5}}}));
  layer->eval();
  const auto out = layer(xyz, features);
  EXPECT_TRUE(at::equal(out.xyz, at::zeros({3, 1, 3})));
  torch::NoGradGuard no_grad;
  const at::Tensor input = at::cat({xyz.transpose(1, 2), features}, 1).unsqueeze(2);
  EXPECT_TRUE(at::allclose(out.features, mlp_of(layer, 0)->forward(input).amax(-1)));
}

TEST(SetAbstraction, ScalesAreConcatenatedInOrder) {
  torch::manual_seed(3);
  const at::Tensor xyz = at::rand({1, 50, 3});
  SetAbstraction both(SetAbstractionOptions().npoint(10).scales(
      {GroupingScale{0.2, 4, {3}}, GroupingScale{0.5, 8, {7}}}));
  both->eval();
  EXPECT_EQ(both->out_channels(), 10);
  const auto out = both(xyz, at::Tensor());
  ASSERT_EQ(out.features.size(1), 10);
  // Point-major, as every set abstraction's output (the next layer's
  // grouping reads those as rows).
  EXPECT_TRUE(out.features.transpose(1, 2).is_contiguous()) << out.features.strides();
  // The second scale alone, with the same weights, gives the last 7 channels.
  SetAbstraction second(SetAbstractionOptions().npoint(10).scales({GroupingScale{0.5, 8, {7}}}));
  second->eval();
  torch::NoGradGuard no_grad;
  auto source = mlp_of(both, 1)->parameters();
  auto target = mlp_of(second, 0)->parameters();
  for (size_t i = 0; i < source.size(); ++i) {
    target[i].copy_(source[i]);
  }
  EXPECT_TRUE(at::allclose(out.features.narrow(1, 3, 7), second(xyz, at::Tensor()).features));
}

// The set abstraction feeds its MLP channels-last groups whatever the
// layout of its input features: point-major features (the previous
// layer's output) and the same values laid out channel-major give the
// same output, bit for bit, and the same gradients.
TEST(SetAbstraction, FeaturesInEitherLayoutGiveTheSameOutput) {
  torch::manual_seed(4);
  const at::Tensor xyz = at::rand({2, 40, 3});
  const at::Tensor point_major = at::randn({2, 40, 6}).transpose(1, 2);
  SetAbstraction layer(SetAbstractionOptions().npoint(12).in_channels(6).scales(
      {GroupingScale{0.3, 8, {16, 8}}, GroupingScale{0.6, 4, {5}}}));
  const at::Tensor pm = point_major.detach().requires_grad_(true);
  const at::Tensor cm = point_major.contiguous().detach().requires_grad_(true);
  const auto from_point_major = layer(xyz, pm);
  const auto from_channel_major = layer(xyz, cm);
  EXPECT_TRUE(at::equal(from_point_major.features, from_channel_major.features));
  const at::Tensor probe = at::randn(from_point_major.features.sizes());
  (from_point_major.features * probe).sum().backward();
  (from_channel_major.features * probe).sum().backward();
  EXPECT_TRUE(at::allclose(pm.grad(), cm.grad(), 1e-6, 1e-6));
}

// channels_last(false) keeps Python PointNet++'s channel-major layout: the
// same parameters give the same output and gradients (up to the float
// rounding of another convolution order), and the output is contiguous.
TEST(SetAbstraction, ChannelMajorLayoutGivesTheSameResults) {
  torch::manual_seed(5);
  const at::Tensor xyz = at::rand({2, 40, 3});
  const at::Tensor features = at::randn({2, 6, 40});
  const auto options = SetAbstractionOptions().npoint(12).in_channels(6).scales(
      {GroupingScale{0.3, 8, {16, 8}}, GroupingScale{0.6, 4, {5}}});
  SetAbstraction fast(options);
  SetAbstraction plain(SetAbstractionOptions(options).channels_last(false));
  {
    torch::NoGradGuard no_grad;
    auto source = fast->parameters();
    auto target = plain->parameters();
    ASSERT_EQ(source.size(), target.size());
    for (size_t i = 0; i < source.size(); ++i) {
      target[i].copy_(source[i]);
    }
  }
  const at::Tensor a = features.clone().requires_grad_(true);
  const at::Tensor b = features.clone().requires_grad_(true);
  const auto out_fast = fast(xyz, a);
  const auto out_plain = plain(xyz, b);
  EXPECT_TRUE(out_plain.features.is_contiguous()) << out_plain.features.strides();
  EXPECT_TRUE(out_fast.features.transpose(1, 2).is_contiguous()) << out_fast.features.strides();
  EXPECT_TRUE(at::allclose(out_fast.features, out_plain.features, 1e-5, 1e-6));
  const at::Tensor probe = at::randn(out_fast.features.sizes());
  (out_fast.features * probe).sum().backward();
  (out_plain.features * probe).sum().backward();
  EXPECT_TRUE(at::allclose(a.grad(), b.grad(), 1e-5, 1e-6));
}

TEST(SetAbstraction, ChecksNameTheArgument) {
  SetAbstraction layer(
      SetAbstractionOptions().npoint(16).in_channels(2).scales({GroupingScale{0.2, 4, {8}}}));
  expect_error<c10::Error>(
      [&] {
        layer(at::rand({2, 32, 2}), at::rand({2, 2, 32}));
      },
      "xyz must have shape (B, N, 3), got [2, 32, 2]");
  expect_error<c10::Error>(
      [&] {
        layer(at::rand({2, 32, 3}), at::rand({2, 3, 32}));
      },
      "features must have shape (B, 2, N) = (2, 2, 32), got [2, 3, 32]");
  expect_error<c10::Error>([&] { layer(at::rand({2, 32, 3}), at::Tensor()); }, "got undefined");
  expect_error<c10::Error>(
      [&] {
        layer(at::rand({2, 8, 3}), at::rand({2, 2, 8}));
      },
      "npoint 16 exceeds the 8 points of xyz");
  expect_error<c10::Error>(
      [] {
        SetAbstraction(SetAbstractionOptions().npoint(4).scales({GroupingScale{0, 4, {8}}}));
      },
      "scale 0 radius must be > 0, got 0");
  expect_error<c10::Error>(
      [] {
        SetAbstraction(SetAbstractionOptions().npoint(0).scales(
            {GroupingScale{0, 0, {8}}, GroupingScale{0, 0, {8}}}));
      },
      "grouping all points (npoint 0) takes one scale, got 2");
}

TEST(PointNet2Cls, PresetsHaveThePapersWidths) {
  PointNet2Cls ssg(pointnet2_cls_preset("ssg", 40));
  PointNet2Cls msg(pointnet2_cls_preset("msg", 40));
  std::vector<int64_t> ssg_widths, msg_widths;
  for (const auto& child : ssg->children()) {
    if (auto sa = std::dynamic_pointer_cast<dtrain::models::SetAbstractionImpl>(child)) {
      ssg_widths.push_back(sa->out_channels());
    }
  }
  for (const auto& child : msg->children()) {
    if (auto sa = std::dynamic_pointer_cast<dtrain::models::SetAbstractionImpl>(child)) {
      msg_widths.push_back(sa->out_channels());
    }
  }
  EXPECT_EQ(ssg_widths, (std::vector<int64_t>{128, 256, 1024}));
  EXPECT_EQ(msg_widths, (std::vector<int64_t>{320, 640, 1024}));
  expect_error<c10::Error>([] { pointnet2_cls_preset("pointnet", 40); },
                           "unknown preset 'pointnet'; known presets: ssg, msg, ssg-lite");
}

TEST(PointNet2Cls, LogitsForEveryPresetAndNormals) {
  torch::manual_seed(4);
  for (const std::string preset : {"ssg", "msg", "ssg-lite"}) {
    PointNet2Cls model(pointnet2_cls_preset(preset, 7));
    model->eval();
    EXPECT_EQ(model(at::rand({2, 600, 3})).sizes(), (std::vector<int64_t>{2, 7})) << preset;
  }
  PointNet2Cls with_normals(pointnet2_cls_preset("ssg-lite", 5, /*in_channels=*/3));
  const at::Tensor points = at::rand({2, 256, 6}).requires_grad_();
  with_normals(points).sum().backward();
  // The normals reach the loss through the features path.
  EXPECT_GT(points.grad().narrow(2, 3, 3).abs().sum().item<double>(), 0);
  expect_error<c10::Error>(
      [&] {
        with_normals(at::rand({2, 256, 3}));
      },
      "points must have shape (B, N, 6) (xyz then features), got "
      "[2, 256, 3]");
}

TEST(PointNet2Cls, RunsUnderCpuBf16Autocast) {
  torch::manual_seed(5);
  PointNet2Cls model(pointnet2_cls_preset("ssg-lite", 4));
  const at::Tensor points = at::rand({4, 256, 3});
  at::Tensor logits;
  {
    dtrain::amp::AutocastGuard autocast(dtrain::amp::AutocastOptions(at::kCPU));
    logits = model(points);
  }
  EXPECT_EQ(logits.scalar_type(), at::kBFloat16);
  logits.to(at::kFloat).sum().backward();
  for (const auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    const at::Tensor& parameter = item.value();
    ASSERT_TRUE(parameter.grad().defined()) << name;
    EXPECT_TRUE(parameter.grad().isfinite().all().item<bool>()) << name;
    EXPECT_EQ(parameter.grad().scalar_type(), at::kFloat) << name;
  }
}

// Two kinds of cloud a classifier must tell apart from shape alone: points
// on a sphere and points on a flat disk, randomly rotated and scaled.
std::pair<at::Tensor, at::Tensor> spheres_and_disks(int64_t count, int64_t n) {
  at::Tensor direction = at::randn({count, n, 3});
  direction = direction / direction.norm(2, -1, true);
  const at::Tensor labels = at::arange(count) % 2;
  at::Tensor points = direction.clone();
  points.select(2, 2).mul_((1 - labels).view({count, 1}));  // flatten the odd ones
  const at::Tensor q = std::get<0>(at::linalg_qr(at::randn({count, 3, 3})));
  points = at::bmm(points, q) * (0.6 + 0.4 * at::rand({count, 1, 1}));
  return {points, labels};
}

TEST(PointNet2Cls, LearnsSpheresFromDisks) {
  torch::manual_seed(6);
  const auto [train_points, train_labels] = spheres_and_disks(32, 64);
  const auto [test_points, test_labels] = spheres_and_disks(32, 64);
  // A small network, so the test stays fast; the layers are the real ones.
  const auto options =
      PointNet2ClsOptions()
          .num_classes(2)
          .layers({SetAbstractionOptions().npoint(16).scales({GroupingScale{0.5, 8, {16, 16}}}),
                   SetAbstractionOptions().npoint(0).scales({GroupingScale{0, 0, {32}}})})
          .head({16})
          .dropout(0);
  PointNet2Cls model(options);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  for (int step = 0; step < 40; ++step) {
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model(train_points), train_labels).backward();
    optimizer.step();
  }
  torch::NoGradGuard no_grad;
  // Settle the batch norms' running statistics on the final weights.
  for (int pass = 0; pass < 30; ++pass) {
    model(train_points);
  }
  model->eval();
  const double accuracy =
      model(test_points).argmax(1).eq(test_labels).to(at::kDouble).mean().item<double>();
  EXPECT_GE(accuracy, 0.9);
}

}  // namespace
