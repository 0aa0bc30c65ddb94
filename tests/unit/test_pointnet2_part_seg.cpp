// dtrain::models::FeaturePropagation and PointNet2PartSeg: interpolation
// against its definition, the skip links, the presets' shapes, the checks,
// and that the network learns a segmentation that depends on the category.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/models/feature_propagation.h"
#include "dtrain/models/pointnet2_part_seg.h"
#include "expect_error.h"

namespace {

using dtrain::testing::expect_error;

using dtrain::models::FeaturePropagation;
using dtrain::models::FeaturePropagationOptions;
using dtrain::models::GroupingScale;
using dtrain::models::interpolate_three_nearest;
using dtrain::models::pointnet2_part_seg_preset;
using dtrain::models::PointNet2PartSeg;
using dtrain::models::PointNet2PartSegOptions;
using dtrain::models::SetAbstractionOptions;

TEST(FeaturePropagation, InterpolatesByInverseSquaredDistanceOfThreeNearest) {
  torch::manual_seed(1);
  const at::Tensor dense = at::rand({2, 30, 3});
  const at::Tensor sparse = at::rand({2, 7, 3});
  const at::Tensor features = at::randn({2, 4, 7});
  const at::Tensor out = interpolate_three_nearest(dense, sparse, features);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2, 4, 30}));
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t i = 0; i < 30; ++i) {
      const at::Tensor d2 = (sparse[b] - dense[b][i]).square().sum(1);  // (7,)
      const at::Tensor nearest = std::get<1>(d2.sort(0)).narrow(0, 0, 3);
      const at::Tensor inverse = 1.0 / (d2.index_select(0, nearest) + 1e-8);
      const at::Tensor weight = inverse / inverse.sum();
      const at::Tensor expected = (features[b].index_select(1, nearest) * weight).sum(1);
      EXPECT_TRUE(at::allclose(out[b].select(1, i), expected, 1e-4, 1e-5))
          << "cloud " << b << ", point " << i;
    }
  }
}

TEST(FeaturePropagation, OneSparsePointSpreadsEverywhereAndCoincidentPointsCopy) {
  torch::manual_seed(4);
  const at::Tensor features = at::randn({1, 3, 1});
  const at::Tensor everywhere =
      interpolate_three_nearest(at::rand({1, 9, 3}), at::zeros({1, 1, 3}), features);
  EXPECT_TRUE(at::equal(everywhere, features.expand({1, 3, 9})));
  // A dense point on a sparse point takes that point's feature. Its two
  // other neighbours keep a weight of about 1e-8 / d^2 (the guard against
  // division by zero), so the sparse points lie apart: at least 0.25 along
  // each axis (d^2 >= 0.18), not at random, where two of them ~0.01 apart
  // (about one cloud in 1,500) would pull the copy past the tolerance.
  const at::Tensor spaced = at::arange(5, at::kFloat).mul(0.3).view({1, 5, 1}).expand({1, 5, 3});
  const at::Tensor sparse = spaced.index_select(1, at::randperm(5)) + 0.05 * at::rand({1, 5, 3});
  const at::Tensor sparse_features = at::randn({1, 2, 5});
  const at::Tensor on_top = interpolate_three_nearest(sparse, sparse, sparse_features);
  EXPECT_TRUE(at::allclose(on_top, sparse_features, 1e-4, 1e-5));
}

TEST(FeaturePropagation, SkipFeaturesFollowTheInterpolatedOnes) {
  torch::manual_seed(2);
  const at::Tensor dense = at::rand({2, 12, 3});
  const at::Tensor sparse = at::rand({2, 4, 3});
  const at::Tensor skip = at::randn({2, 5, 12});
  const at::Tensor sparse_features = at::randn({2, 3, 4});
  FeaturePropagation fp(FeaturePropagationOptions().in_channels(8).mlp({6}));
  fp->eval();
  const at::Tensor out = fp(dense, sparse, skip, sparse_features);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2, 6, 12}));
  torch::NoGradGuard no_grad;
  auto mlp = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(fp->named_children()["mlp"]);
  ASSERT_TRUE(mlp);
  const at::Tensor joined =
      at::cat({interpolate_three_nearest(dense, sparse, sparse_features), skip}, 1);
  EXPECT_TRUE(at::allclose(out, mlp->forward(joined)));
  expect_error<c10::Error>([&] { fp(dense, sparse, at::Tensor(), sparse_features); },
                           "3 sparse + 0 skip channels = 3, but in_channels is 8");
  expect_error<c10::Error>(
      [&] {
        fp(dense, at::rand({2, 2, 3}), skip, at::randn({2, 3, 2}));
      },
      "xyz2 needs 1 or at least 3 points, got 2");
}

TEST(PointNet2PartSeg, PresetsGiveLogitsPerPoint) {
  torch::manual_seed(3);
  for (const std::string preset : {"ssg", "ssg-lite"}) {
    PointNet2PartSeg model(pointnet2_part_seg_preset(preset, 50, 16));
    model->eval();
    const at::Tensor logits = model(at::rand({2, 600, 3}), at::tensor({3, 15}, at::kLong));
    EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, 50, 600})) << preset;
  }
  PointNet2PartSeg normals(pointnet2_part_seg_preset("ssg-lite", 4, 0, /*in_channels=*/3));
  normals->eval();
  EXPECT_EQ(normals(at::rand({1, 300, 6})).sizes(), (std::vector<int64_t>{1, 4, 300}));
  PointNet2PartSeg model(pointnet2_part_seg_preset("ssg-lite", 4, 2));
  expect_error<c10::Error>(
      [&] {
        model(at::rand({2, 300, 3}), at::tensor({0, 2}, at::kLong));
      },
      "categories must lie in [0, 2)");
  expect_error<c10::Error>(
      [&] {
        model(at::rand({2, 300, 3}));
      },
      "categories must be (B,) = (2,) int64, got undefined");
  expect_error<c10::Error>([] { pointnet2_part_seg_preset("msg", 50, 16); },
                           "unknown preset 'msg'; known presets: ssg, ssg-lite");
}

TEST(PointNet2PartSeg, RunsUnderCpuBf16Autocast) {
  torch::manual_seed(5);
  PointNet2PartSeg model(pointnet2_part_seg_preset("ssg-lite", 3, 2));
  at::Tensor logits;
  {
    dtrain::amp::AutocastGuard autocast(dtrain::amp::AutocastOptions(at::kCPU));
    logits = model(at::rand({2, 256, 3}), at::tensor({0, 1}, at::kLong));
  }
  EXPECT_EQ(logits.scalar_type(), at::kBFloat16);
  logits.to(at::kFloat).sum().backward();
  for (const auto& item : model->named_parameters()) {
    ASSERT_TRUE(item.value().grad().defined()) << item.key();
    EXPECT_TRUE(item.value().grad().isfinite().all().item<bool>()) << item.key();
  }
}

// Points on a sphere; category 0 splits them by the sign of z, category 1
// by the sign of x: the right answer needs the category as well as the shape.
std::tuple<at::Tensor, at::Tensor, at::Tensor> halves(int64_t count, int64_t n) {
  at::Tensor points = at::randn({count, n, 3});
  points = points / points.norm(2, -1, true);
  const at::Tensor categories = at::arange(count) % 2;
  const at::Tensor axis =
      at::where(categories.view({count, 1}) == 0, at::full({1, 1}, 2), at::zeros({1, 1}, at::kLong))
          .expand({count, n});
  const at::Tensor coordinate = points.gather(2, axis.unsqueeze(-1)).squeeze(-1);
  return {points, categories, (coordinate > 0).to(at::kLong)};
}

TEST(PointNet2PartSeg, LearnsASegmentationThatDependsOnTheCategory) {
  torch::manual_seed(4);
  const auto [train_points, train_categories, train_parts] = halves(16, 64);
  const auto [test_points, test_categories, test_parts] = halves(16, 64);
  const auto options =
      PointNet2PartSegOptions()
          .num_parts(2)
          .num_categories(2)
          .layers({SetAbstractionOptions().npoint(16).scales({GroupingScale{0.6, 8, {16}}}),
                   SetAbstractionOptions().npoint(0).scales({GroupingScale{0, 0, {32}}})})
          .propagations({{32}, {32, 16}})
          .head({16})
          .dropout(0);
  PointNet2PartSeg model(options);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  for (int step = 0; step < 60; ++step) {
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model(train_points, train_categories), train_parts)
        .backward();
    optimizer.step();
  }
  torch::NoGradGuard no_grad;
  for (int pass = 0; pass < 30; ++pass) {  // settle batch norm's statistics
    model(train_points, train_categories);
  }
  model->eval();
  const double accuracy = model(test_points, test_categories)
                              .argmax(1)
                              .eq(test_parts)
                              .to(at::kDouble)
                              .mean()
                              .item<double>();
  // Ignoring the category gets one half of the clouds right and the other
  // half's points right by chance: 75%.
  EXPECT_GE(accuracy, 0.85);
}

}  // namespace
