// The mixed-precision policy of the PointNet++ ops under CPU bf16 autocast
// (docs/amp.md): coordinates and distances stay float32 whatever autocast
// says, features run in the dtype they arrive in -- bf16 when a layer under
// autocast produced them -- and gradients flow back to fp32 weights.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/kernels/pointnet2.h"

namespace {

namespace amp = dtrain::amp;
namespace k = dtrain::kernels;

TEST(AmpPointOps, CoordinatesStayFp32AndFeaturesRunInBf16) {
  at::manual_seed(0);
  const at::Tensor xyz = at::rand({2, 64, 3});
  const at::Tensor points = at::randn({2, 64, 5});
  at::Tensor weight = at::randn({8, 5}).set_requires_grad(true);

  // Reference without autocast: the same ops on the same inputs.
  const at::Tensor idx_ref = k::furthest_point_sample(xyz, 16);
  const at::Tensor centres_ref = k::gather_points(xyz.transpose(1, 2), idx_ref).transpose(1, 2);
  const k::KnnResult knn_ref = k::knn(centres_ref, xyz, 4);

  amp::AutocastGuard autocast(at::kCPU);
  // Features from a layer under autocast: bf16.
  const at::Tensor features = at::linear(points, weight).transpose(1, 2);  // (B, 8, N)
  ASSERT_EQ(features.scalar_type(), at::kBFloat16);

  const at::Tensor idx = k::furthest_point_sample(xyz, 16);
  EXPECT_TRUE(at::equal(idx, idx_ref));
  const at::Tensor centres = k::gather_points(xyz.transpose(1, 2), idx).transpose(1, 2);
  EXPECT_EQ(centres.scalar_type(), at::kFloat);
  const k::KnnResult knn = k::knn(centres, xyz, 4);
  EXPECT_EQ(knn.dist2.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(knn.idx, knn_ref.idx));
  EXPECT_TRUE(at::equal(knn.dist2, knn_ref.dist2));
  const k::ThreeNnResult nn = k::three_nn(xyz, centres);
  EXPECT_EQ(nn.dist2.scalar_type(), at::kFloat);

  const at::Tensor grouped = k::group_points(features, knn.idx);
  EXPECT_EQ(grouped.scalar_type(), at::kBFloat16);
  const at::Tensor weights = 1.0 / (nn.dist2 + 1e-8);
  const at::Tensor interpolated =
      k::three_interpolate(k::gather_points(features, idx), nn.idx, weights / weights.sum(2, true));
  EXPECT_EQ(interpolated.scalar_type(), at::kBFloat16);
  // Gathered values are the bf16 features themselves (a gather does no arithmetic).
  EXPECT_TRUE(at::equal(grouped.select(3, 0),
                        at::stack({features[0].index_select(1, knn.idx[0].select(1, 0)),
                                   features[1].index_select(1, knn.idx[1].select(1, 0))})));

  // Backward reaches the fp32 weight with an fp32 gradient.
  (grouped.to(at::kFloat).sum() + interpolated.to(at::kFloat).sum()).backward();
  ASSERT_TRUE(weight.grad().defined());
  EXPECT_EQ(weight.grad().scalar_type(), at::kFloat);
  EXPECT_TRUE(weight.grad().isfinite().all().item<bool>());
}

// The torch custom ops (torch.ops.dtrain.*) have no autocast kernel: the
// dispatcher falls through, so fp32 features stay fp32 under autocast -- the
// ops never change a dtype on their own.
TEST(AmpPointOps, CustomOpsPassThroughAutocast) {
  const at::Tensor features = at::randn({1, 4, 10});
  const at::Tensor idx = at::randint(0, 10, {1, 6}, at::TensorOptions().dtype(at::kLong));
  auto op = c10::Dispatcher::singleton()
                .findSchemaOrThrow("dtrain::gather_points", "")
                .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  amp::AutocastGuard autocast(at::kCPU);
  const at::Tensor out = op.call(features, idx);
  EXPECT_EQ(out.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(out, features.index_select(2, idx[0])));
  EXPECT_EQ(op.call(features.to(at::kBFloat16), idx).scalar_type(), at::kBFloat16);
}

}  // namespace
