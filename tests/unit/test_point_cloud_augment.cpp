// dtrain::datasets::augment_point_clouds: each step within its bounds, rotations
// that keep shapes and carry normals along, dropout to the first point, and
// the checks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "dtrain/datasets/point_cloud_augment.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"

namespace {

using dtrain::testing::expect_error;

using dtrain::datasets::augment_point_clouds;
using dtrain::datasets::PointCloudAugmentOptions;

// Every step off; tests turn on the one they look at.
PointCloudAugmentOptions nothing() {
  return PointCloudAugmentOptions().scale_min(1).scale_max(1).shift(0).jitter_sigma(0);
}

at::Generator seeded(uint64_t seed) {
  return at::detail::createCPUGenerator(seed);
}

TEST(PointCloudAugment, AllOffIsACopy) {
  const at::Tensor points = at::randn({2, 16, 6});
  const at::Tensor out = augment_point_clouds(points, nothing());
  EXPECT_TRUE(at::equal(out, points));
  EXPECT_NE(out.data_ptr(), points.data_ptr());
}

TEST(PointCloudAugment, ScaleIsOneFactorPerCloudWithinBounds) {
  const at::Tensor points = at::randn({64, 32, 3});
  const at::Tensor out =
      augment_point_clouds(points, nothing().scale_min(0.5).scale_max(2), seeded(1));
  const at::Tensor factor = out / points;  // (B, N, 3): the same number within a cloud
  const at::Tensor per_cloud = factor.amax({1, 2});
  EXPECT_TRUE(at::allclose(factor.amin({1, 2}), per_cloud, 1e-4, 1e-5));
  EXPECT_GE(per_cloud.min().item<double>(), 0.5 - 1e-6);
  EXPECT_LE(per_cloud.max().item<double>(), 2 + 1e-6);
  EXPECT_GT(per_cloud.max().item<double>() - per_cloud.min().item<double>(), 0.5)
      << "64 clouds should draw different factors";
}

TEST(PointCloudAugment, ShiftMovesWholeCloudsWithinBounds) {
  const at::Tensor points = at::randn({64, 32, 6});
  const at::Tensor out = augment_point_clouds(points, nothing().shift(0.1), seeded(2));
  const at::Tensor offset = (out - points).narrow(2, 0, 3);
  EXPECT_TRUE(at::allclose(offset, offset.narrow(1, 0, 1).expand_as(offset), 1e-5, 1e-6));
  EXPECT_LE(offset.abs().max().item<double>(), 0.1 + 1e-6);
  EXPECT_TRUE(at::equal(out.narrow(2, 3, 3), points.narrow(2, 3, 3))) << "normals moved";
}

TEST(PointCloudAugment, JitterIsClipped) {
  const at::Tensor points = at::zeros({8, 512, 3});
  const at::Tensor out =
      augment_point_clouds(points, nothing().jitter_sigma(0.05).jitter_clip(0.02), seeded(3));
  EXPECT_LE(out.abs().max().item<double>(), 0.02 + 1e-7);
  // With sigma 2.5 times the clip, most draws land on the clip.
  EXPECT_GT((out.abs() > 0.0199).to(at::kDouble).mean().item<double>(), 0.5);
}

TEST(PointCloudAugment, RotationKeepsUpCoordinateAndDistancesAndTurnsNormals) {
  at::Tensor points = at::randn({16, 40, 6});
  const at::Tensor out =
      augment_point_clouds(points, nothing().rotate_up(true).up_axis(1), seeded(4));
  const at::Tensor xyz = out.narrow(2, 0, 3);
  EXPECT_TRUE(at::allclose(xyz.select(2, 1), points.select(2, 1), 1e-5, 1e-6)) << "y changed";
  // Distance from the up axis, hence every point's norm, is kept.
  EXPECT_TRUE(at::allclose(xyz.norm(2, -1), points.narrow(2, 0, 3).norm(2, -1), 1e-5, 1e-5));
  // A normal equal to its point turns with it.
  points.narrow(2, 3, 3).copy_(points.narrow(2, 0, 3));
  const at::Tensor same = augment_point_clouds(points, nothing().rotate_up(true), seeded(5));
  EXPECT_TRUE(at::allclose(same.narrow(2, 3, 3), same.narrow(2, 0, 3), 1e-5, 1e-6));
  EXPECT_FALSE(at::allclose(same.narrow(2, 0, 3), points.narrow(2, 0, 3), 1e-3, 1e-3))
      << "nothing rotated";
}

TEST(PointCloudAugment, DropoutReplacesPointsWithTheFirst) {
  const at::Tensor points = at::randn({32, 200, 3});
  const at::Tensor out = augment_point_clouds(points, nothing().dropout_max(0.875), seeded(6));
  const at::Tensor kept = (out == points).all(2);                   // (B, N)
  const at::Tensor first = (out == points.narrow(1, 0, 1)).all(2);  // replaced
  EXPECT_TRUE((kept | first).all().item<bool>()) << "a point became something else";
  const double dropped = 1 - kept.to(at::kDouble).mean().item<double>();
  EXPECT_GT(dropped, 0.2);  // mean ratio 0.4375
  EXPECT_LT(dropped, 0.7);
}

TEST(PointCloudAugment, ShuffleReordersEachCloudsPointsWhole) {
  const at::Tensor points = at::randn({4, 100, 6});
  const at::Tensor out = augment_point_clouds(points, nothing().shuffle_points(true), seeded(9));
  for (int64_t b = 0; b < 4; ++b) {
    // The same rows (points with their normals), in another order.
    const at::Tensor sorted_in = std::get<0>(points[b].select(1, 0).sort());
    const at::Tensor sorted_out = std::get<0>(out[b].select(1, 0).sort());
    EXPECT_TRUE(at::equal(sorted_in, sorted_out)) << "cloud " << b;
    EXPECT_FALSE(at::equal(out[b], points[b])) << "cloud " << b << " kept its order";
    for (int64_t i = 0; i < 100; i += 17) {
      const at::Tensor where = (points[b].select(1, 0) == out[b][i][0]).nonzero();
      ASSERT_EQ(where.size(0), 1);
      EXPECT_TRUE(at::equal(points[b][where.item<int64_t>()], out[b][i]))
          << "a point was separated from its normal";
    }
  }
}

TEST(PointCloudAugment, SameGeneratorSeedSameBatch) {
  const at::Tensor points = at::randn({4, 64, 3});
  const auto options =
      PointCloudAugmentOptions().rotate_up(true).dropout_max(0.5).shuffle_points(true);
  EXPECT_TRUE(at::equal(augment_point_clouds(points, options, seeded(7)),
                        augment_point_clouds(points, options, seeded(7))));
  EXPECT_FALSE(at::equal(augment_point_clouds(points, options, seeded(7)),
                         augment_point_clouds(points, options, seeded(8))));
}

TEST(PointCloudAugment, EmptyCloudsAndEmptyBatchesComeBackAsCopies) {
  const auto everything =
      PointCloudAugmentOptions().rotate_up(true).shuffle_points(true).dropout_max(0.5);
  for (const auto& sizes : {std::vector<int64_t>{2, 0, 3}, std::vector<int64_t>{0, 16, 6},
                            std::vector<int64_t>{0, 0, 3}}) {
    const at::Tensor points = at::empty(sizes);
    at::Generator gen = seeded(10);
    const at::Tensor out = augment_point_clouds(points, everything, gen);
    EXPECT_EQ(out.sizes(), points.sizes());
    EXPECT_EQ(out.scalar_type(), points.scalar_type());
    // Nothing was drawn: the generator gives what a fresh one does.
    EXPECT_TRUE(
        at::equal(at::empty({8}).uniform_(0, 1, gen), at::empty({8}).uniform_(0, 1, seeded(10))))
        << "shape " << points.sizes();
  }
}

TEST(PointCloudAugment, OptionsMustFitThePointsType) {
  auto check = [](const at::Tensor& points, const PointCloudAugmentOptions& options,
                  const std::string& text) {
    expect_error([&] { augment_point_clouds(points, options); }, text);
  };
  const at::Tensor points = at::randn({2, 8, 3});
  check(points, PointCloudAugmentOptions().scale_max(1e300),
        "scale_max must be <= 3.40282e+38 for Float points, got 1e+300");
  check(points, PointCloudAugmentOptions().scale_min(1e300).scale_max(1e300),
        "scale_min must be <= 3.40282e+38 for Float points, got 1e+300");
  check(points, PointCloudAugmentOptions().shift(1e300),
        "shift must be <= 1.70141e+38 for Float points, got 1e+300");
  check(points, PointCloudAugmentOptions().jitter_sigma(1e300),
        "jitter_sigma must be <= 3.40282e+38 for Float points, got 1e+300");
  check(points, PointCloudAugmentOptions().jitter_clip(1e300),
        "jitter_clip must be <= 3.40282e+38 for Float points, got 1e+300");
  const at::Tensor half = points.to(at::kHalf);
  check(half, PointCloudAugmentOptions().scale_max(1e5),
        "scale_max must be <= 65504 for Half points, got 100000");
  // Within Half's range, but the width 2 shift of the offset is not.
  check(half, PointCloudAugmentOptions().shift(40000),
        "shift must be <= 32752 for Half points, got 40000");
  // What fits is fine: Double holds 1e300, Half holds its own largest value.
  const at::Tensor big =
      augment_point_clouds(points.to(at::kDouble), nothing().scale_min(1e300).scale_max(1e300));
  EXPECT_TRUE(at::allclose(big, points.to(at::kDouble) * 1e300));
  EXPECT_NO_THROW(augment_point_clouds(half, nothing().shift(32752)));
}

TEST(PointCloudAugment, ChecksNameTheProblem) {
  auto check = [](const at::Tensor& points, const PointCloudAugmentOptions& options,
                  const std::string& text) {
    expect_error([&] { augment_point_clouds(points, options); }, text);
  };
  const at::Tensor points = at::randn({2, 8, 3});
  check(points, PointCloudAugmentOptions().scale_min(2).scale_max(1),
        "need 0 < scale_min <= scale_max, got scale_min 2");
  check(points, PointCloudAugmentOptions().dropout_max(1), "dropout_max must be in [0, 1), got 1");
  check(points, PointCloudAugmentOptions().up_axis(3), "up_axis must be 0, 1 or 2, got 3");
  check(at::randn({2, 8}), {},
        "must be a floating (B, N, C >= 3) tensor, got Float of shape [2, 8]");
  check(at::ones({2, 8, 3}, at::kLong), {}, "got Long");
}

}  // namespace
