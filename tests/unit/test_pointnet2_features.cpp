// gather_points, group_points and three_interpolate on CPU: forward against
// brute force in every dtype, backward against a central-difference check in
// float64 and against an in-order reference scatter (bitwise), the
// deterministic mode, the torch custom-op registration, and input checks.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "dtrain/amp/autocast.h"
#include "dtrain/kernels/pointnet2.h"
#include "expect_error.h"
#include "test_pointnet2_reference.h"

namespace {

namespace k = dtrain::kernels;
using dtrain::test::numerical_gradient;
using dtrain::test::ref_gather;
using dtrain::test::ref_interpolate;
using dtrain::test::ref_scatter;
using dtrain::testing::expect_error;

at::Tensor random_index(int64_t high, at::IntArrayRef shape) {
  return at::randint(0, high, shape, at::TensorOptions().dtype(at::kLong));
}

// Random interpolation inputs: idx (B, n, 3) with repeats, weights (B, n, 3).
struct InterpolateInputs {
  at::Tensor features, idx, weight;
};

InterpolateInputs interpolate_inputs(int64_t batch, int64_t channels, int64_t m, int64_t n,
                                     at::ScalarType dtype) {
  return {at::randn({batch, channels, m}).to(dtype), random_index(m, {batch, n, 3}),
          at::rand({batch, n, 3}).to(dtype)};
}

class FeatureDtypes : public ::testing::TestWithParam<at::ScalarType> {};

TEST_P(FeatureDtypes, GatherAndGroupMatchReference) {
  at::manual_seed(21);
  const at::Tensor features = at::randn({2, 5, 40}).to(GetParam());
  const at::Tensor idx = random_index(40, {2, 17});
  const at::Tensor gathered = k::gather_points(features, idx);
  EXPECT_EQ(gathered.scalar_type(), GetParam());
  EXPECT_TRUE(at::equal(gathered, ref_gather(features, idx)));
  const at::Tensor group_idx = random_index(40, {2, 6, 4});
  const at::Tensor grouped = k::group_points(features, group_idx);
  EXPECT_EQ(grouped.sizes(), (at::IntArrayRef{2, 5, 6, 4}));
  EXPECT_TRUE(at::equal(grouped, ref_gather(features, group_idx)));
  // Strided features.
  const at::Tensor strided = at::randn({2, 40, 5}).to(GetParam()).transpose(1, 2);
  EXPECT_TRUE(at::equal(k::gather_points(strided, idx), ref_gather(strided.contiguous(), idx)));
}

TEST_P(FeatureDtypes, ScatterBackwardEqualsInOrderReferenceBitwise) {
  at::manual_seed(22);
  const at::ScalarType dtype = GetParam();
  const at::ScalarType acc = dtype == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor idx = random_index(9, {2, 30});  // many repeats per point
  const at::Tensor grad_out = at::randn({2, 4, 30}).to(dtype);
  const at::Tensor expected = ref_scatter(grad_out, idx, at::Tensor(), 9, acc);
  for (auto mode : {k::ScatterMode::kAtomic, k::ScatterMode::kDeterministic}) {
    const at::Tensor got = k::gather_points_backward(grad_out, idx, 9, mode);
    EXPECT_EQ(got.scalar_type(), dtype);
    EXPECT_TRUE(at::equal(got, expected)) << "mode " << static_cast<int>(mode);
  }
  const at::Tensor group_idx = random_index(9, {2, 5, 6});
  const at::Tensor group_grad = at::randn({2, 4, 5, 6}).to(dtype);
  EXPECT_TRUE(
      at::equal(k::group_points_backward(group_grad, group_idx, 9, k::ScatterMode::kDeterministic),
                ref_scatter(group_grad, group_idx, at::Tensor(), 9, acc)));
}

// Note [point-major features]: features with their channels innermost (a
// (B, N, C) tensor transposed) are grouped into a channels-last tensor of
// the same values, and the backward reads a channels-last gradient, or a
// channel slice of one, where it lies. 70 channels span two of the
// scatter's blocks of 64.
TEST_P(FeatureDtypes, PointMajorFeaturesGroupChannelsLastWithTheSameValuesAndGradients) {
  at::manual_seed(27);
  const at::ScalarType dtype = GetParam();
  const at::ScalarType acc = dtype == at::kDouble ? at::kDouble : at::kFloat;
  const int64_t n = 9;  // few points: many neighbours land on each
  for (const int64_t channels : {3, 70}) {
    const at::Tensor features = at::randn({2, n, channels}).to(dtype).transpose(1, 2);
    const at::Tensor idx = random_index(n, {2, 5, 6});
    const at::Tensor grouped = k::group_points(features, idx);
    EXPECT_TRUE(grouped.is_contiguous(at::MemoryFormat::ChannelsLast)) << grouped.strides();
    EXPECT_TRUE(at::equal(grouped, ref_gather(features.contiguous(), idx)));
    const at::Tensor centre_idx = random_index(n, {2, 4});
    const at::Tensor gathered = k::gather_points(features, centre_idx);
    EXPECT_TRUE(gathered.transpose(1, 2).is_contiguous()) << gathered.strides();
    EXPECT_TRUE(at::equal(gathered, ref_gather(features.contiguous(), centre_idx)));

    const at::Tensor grad = at::randn({2, channels + 2, 5, 6}).to(dtype);
    const at::Tensor grad_channels_last = grad.contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor grad_sizes_of_out = grad.narrow(1, 0, channels);
    for (const at::Tensor& grad_out :
         {grad_channels_last.narrow(1, 0, channels).contiguous(at::MemoryFormat::ChannelsLast),
          grad_channels_last.narrow(1, 2, channels),  // a slice, as a concatenation's backward
          grad_sizes_of_out.contiguous()}) {
      const at::Tensor leaf = features.detach().requires_grad_(true);
      k::group_points(leaf, idx).backward(grad_out);
      ASSERT_TRUE(leaf.grad().defined());
      EXPECT_EQ(leaf.grad().scalar_type(), dtype);
      EXPECT_TRUE(at::equal(leaf.grad(), ref_scatter(grad_out, idx, at::Tensor(), n, acc)))
          << "channels " << channels << ", gradient strides " << grad_out.strides();
    }
  }
}

TEST_P(FeatureDtypes, InterpolateMatchesReference) {
  at::manual_seed(23);
  const at::ScalarType dtype = GetParam();
  const auto in = interpolate_inputs(2, 6, 20, 33, dtype);
  const at::Tensor got = k::three_interpolate(in.features, in.idx, in.weight);
  EXPECT_EQ(got.scalar_type(), dtype);
  EXPECT_EQ(got.sizes(), (at::IntArrayRef{2, 6, 33}));
  // float32 accumulation: one rounding to the output dtype, plus float32
  // rounding of three products and two sums.
  const double tol = dtype == at::kDouble  ? 1e-12
                     : dtype == at::kFloat ? 1e-5
                     : dtype == at::kHalf  ? 2e-3
                                           : 2e-2;
  EXPECT_TRUE(
      at::allclose(got.to(at::kDouble), ref_interpolate(in.features, in.idx, in.weight), tol, tol));
  // The feature gradient is a weighted scatter, summed in order.
  const at::Tensor grad_out = at::randn({2, 6, 33}).to(dtype);
  const auto grads = k::three_interpolate_backward(grad_out, in.features, in.idx, in.weight,
                                                   k::ScatterMode::kAtomic);
  EXPECT_TRUE(
      at::equal(grads.features, ref_scatter(grad_out, in.idx, in.weight, 20,
                                            dtype == at::kDouble ? at::kDouble : at::kFloat)));
  EXPECT_EQ(grads.weight.sizes(), in.weight.sizes());
  EXPECT_EQ(grads.weight.scalar_type(), dtype);
}

INSTANTIATE_TEST_SUITE_P(PointNet2, FeatureDtypes,
                         ::testing::Values(at::kFloat, at::kDouble, at::kHalf, at::kBFloat16));

// Under mixed precision the features are float16 or bfloat16 while the
// interpolation weights come from three_nn's float32 distances: the weights
// are used as given and each output is rounded once (Note [Interpolation
// weights in the accumulation type] in src/dispatch.h).
class HalfFeatures : public ::testing::TestWithParam<at::ScalarType> {};

// The features of idx[..., t] for every output (B, C, n), in float32.
at::Tensor neighbour_features(const at::Tensor& features, const at::Tensor& idx, int64_t t) {
  const at::Tensor index =
      idx.select(2, t).unsqueeze(1).expand({features.size(0), features.size(1), idx.size(1)});
  return features.to(at::kFloat).gather(2, index);
}

TEST_P(HalfFeatures, InterpolateUsesFloat32WeightsUnrounded) {
  at::manual_seed(25);
  const at::ScalarType dtype = GetParam();
  const auto in = interpolate_inputs(2, 6, 20, 33, dtype);
  const at::Tensor weight = at::rand({2, 33, 3});  // float32: most not representable in dtype
  const at::Tensor got = k::three_interpolate(in.features, in.idx, weight);
  ASSERT_EQ(got.scalar_type(), dtype);
  // The kernels' float32 sums, (w0 f0 + w1 f1) + w2 f2, rounded once.
  const auto term = [&](int64_t t) {
    return weight.select(2, t).unsqueeze(1) * neighbour_features(in.features, in.idx, t);
  };
  const at::Tensor expected = ((term(0) + term(1)) + term(2)).to(dtype);
  EXPECT_TRUE(at::equal(got, expected));
  // Weights rounded to the features' dtype first give other values.
  EXPECT_FALSE(at::equal(k::three_interpolate(in.features, in.idx, weight.to(dtype)), expected));

  // Gradients: the features' is the float32 weighted scatter rounded once;
  // the weights' is float32, as accurate as float32 sums over 6 channels.
  const at::Tensor features = in.features.clone().requires_grad_(true);
  const at::Tensor w = weight.clone().requires_grad_(true);
  const at::Tensor grad_out = at::randn({2, 6, 33}).to(dtype);
  k::three_interpolate(features, in.idx, w).backward(grad_out);
  EXPECT_TRUE(at::equal(features.grad(), ref_scatter(grad_out, in.idx, weight, 20, at::kFloat)));
  ASSERT_EQ(w.grad().scalar_type(), at::kFloat);
  std::vector<at::Tensor> per_neighbour;
  for (int64_t t = 0; t < 3; ++t) {
    per_neighbour.push_back(
        (grad_out.to(at::kDouble) * neighbour_features(in.features, in.idx, t).to(at::kDouble))
            .sum(1));
  }
  const at::Tensor expected_w = at::stack(per_neighbour, 2);  // (B, n, 3)
  EXPECT_TRUE(at::allclose(w.grad().to(at::kDouble), expected_w, 1e-5, 1e-5));
  // The explicit backward gives the weight gradient in the weight's dtype.
  const auto grads = k::three_interpolate_backward(grad_out, in.features, in.idx, weight,
                                                   k::ScatterMode::kDeterministic);
  EXPECT_EQ(grads.weight.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(grads.weight, w.grad()));
}

INSTANTIATE_TEST_SUITE_P(PointNet2, HalfFeatures, ::testing::Values(at::kHalf, at::kBFloat16));

// Analytic gradient (autograd through the public op) against central
// differences of L(x) = sum(op(x) * r) in float64, eps 1e-6, within 1e-5.
void expect_gradient_matches(const std::function<at::Tensor(const at::Tensor&)>& op,
                             const at::Tensor& input) {
  at::manual_seed(24);
  const at::Tensor probe = op(input.detach());
  const at::Tensor r = at::randn(probe.sizes(), at::kDouble);
  const at::Tensor x = input.detach().clone().requires_grad_(true);
  const at::Tensor loss = (op(x) * r).sum();
  loss.backward();
  ASSERT_TRUE(x.grad().defined());
  const at::Tensor numeric = numerical_gradient(
      [&](const at::Tensor& v) { return (op(v) * r).sum().item<double>(); }, input);
  EXPECT_TRUE(at::allclose(x.grad(), numeric, 1e-5, 1e-5))
      << "max error " << (x.grad() - numeric).abs().max().item<double>();
}

TEST(FeatureGradients, FiniteDifferencesInFloat64) {
  at::manual_seed(25);
  const at::Tensor features = at::randn({2, 3, 7}, at::kDouble);
  const at::Tensor idx = random_index(7, {2, 9});
  expect_gradient_matches([&](const at::Tensor& f) { return k::gather_points(f, idx); }, features);
  const at::Tensor group_idx = random_index(7, {2, 4, 3});
  expect_gradient_matches([&](const at::Tensor& f) { return k::group_points(f, group_idx); },
                          features);
  // Point-major features (Note [point-major features]).
  const auto point_major = [](const at::Tensor& f) {
    return f.transpose(1, 2).contiguous().transpose(1, 2);
  };
  expect_gradient_matches(
      [&](const at::Tensor& f) { return k::group_points(point_major(f), group_idx); }, features);
  expect_gradient_matches(
      [&](const at::Tensor& f) { return k::gather_points(point_major(f), idx); }, features);
  const at::Tensor tri_idx = random_index(7, {2, 5, 3});
  const at::Tensor weight = at::rand({2, 5, 3}, at::kDouble);
  expect_gradient_matches(
      [&](const at::Tensor& f) { return k::three_interpolate(f, tri_idx, weight); }, features);
  expect_gradient_matches(
      [&](const at::Tensor& w) { return k::three_interpolate(features, tri_idx, w); }, weight);
}

TEST(FeatureGradients, WeightGradientOfLowerPrecisionWeightsFlowsBack) {
  // float32 weights with float64 features: converted differentiably.
  at::manual_seed(26);
  const at::Tensor features = at::randn({1, 2, 5}, at::kDouble);
  const at::Tensor idx = random_index(5, {1, 4, 3});
  const at::Tensor weight = at::rand({1, 4, 3}).requires_grad_(true);
  k::three_interpolate(features, idx, weight).sum().backward();
  ASSERT_TRUE(weight.grad().defined());
  EXPECT_EQ(weight.grad().scalar_type(), at::kFloat);
}

TEST(DeterministicMode, GlobalSwitchAndTorchFlag) {
  k::set_deterministic_backward(false);
  const bool torch_flag = at::globalContext().deterministicAlgorithms();
  at::globalContext().setDeterministicAlgorithms(false, false);
  EXPECT_EQ(k::backward_scatter_mode(), k::ScatterMode::kAtomic);
  k::set_deterministic_backward(true);
  EXPECT_EQ(k::backward_scatter_mode(), k::ScatterMode::kDeterministic);
  k::set_deterministic_backward(false);
  at::globalContext().setDeterministicAlgorithms(true, false);
  EXPECT_EQ(k::backward_scatter_mode(), k::ScatterMode::kDeterministic);
  at::globalContext().setDeterministicAlgorithms(torch_flag, false);
}

TEST(DeterministicMode, EqualsFastPathAndRepeatsBitwise) {
  at::manual_seed(27);
  const at::Tensor idx = random_index(50, {4, 3000});
  const at::Tensor grad_out = at::randn({4, 16, 3000});
  const at::Tensor fast = k::gather_points_backward(grad_out, idx, 50, k::ScatterMode::kAtomic);
  const at::Tensor first =
      k::gather_points_backward(grad_out, idx, 50, k::ScatterMode::kDeterministic);
  EXPECT_TRUE(at::equal(fast, first));
  for (int repeat = 0; repeat < 3; ++repeat) {
    EXPECT_TRUE(at::equal(
        first, k::gather_points_backward(grad_out, idx, 50, k::ScatterMode::kDeterministic)));
  }
  // Through autograd with the global switch on.
  k::set_deterministic_backward(true);
  const at::Tensor features = at::randn({4, 16, 50}).requires_grad_(true);
  k::gather_points(features, idx).backward(grad_out);
  k::set_deterministic_backward(false);
  EXPECT_TRUE(at::equal(features.grad(), first));
}

TEST(CustomOps, RegisteredWithTheDispatcher) {
  // The same ops Python reaches through torch.ops.dtrain.*.
  at::manual_seed(28);
  const auto fps = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("dtrain::furthest_point_sample", "")
                       .typed<at::Tensor(const at::Tensor&, int64_t, int64_t)>();
  const at::Tensor xyz = at::rand({2, 30, 3});
  EXPECT_TRUE(at::equal(fps.call(xyz, 10, 0), k::furthest_point_sample(xyz, 10)));
  const auto gather = c10::Dispatcher::singleton()
                          .findSchemaOrThrow("dtrain::gather_points", "")
                          .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  const at::Tensor features = at::randn({2, 3, 30}, at::kDouble).requires_grad_(true);
  const at::Tensor idx = random_index(30, {2, 8});
  const at::Tensor out = gather.call(features, idx);
  EXPECT_TRUE(at::equal(out, ref_gather(features.detach(), idx)));
  out.sum().backward();  // the Autograd kernel records the graph
  EXPECT_TRUE(at::equal(features.grad(), ref_scatter(at::ones({2, 3, 8}, at::kDouble), idx,
                                                     at::Tensor(), 30, at::kDouble)));
  for (const char* name : {"dtrain::ball_query", "dtrain::knn", "dtrain::group_points",
                           "dtrain::three_nn", "dtrain::three_interpolate"}) {
    EXPECT_TRUE(c10::Dispatcher::singleton().findSchema({name, ""}).has_value()) << name;
  }
}

// Note [The PointNet++ ops under autocast] (src/register_ops.cpp): every op
// has a kernel on both autocast keys; through the dispatcher under CPU bf16
// autocast, coordinate ops answer in float32 as for float32 coordinates and
// feature ops keep their features' dtype.
TEST(CustomOps, RegisteredForAutocast) {
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const char* name :
       {"dtrain::furthest_point_sample", "dtrain::ball_query", "dtrain::knn", "dtrain::three_nn",
        "dtrain::gather_points", "dtrain::group_points", "dtrain::three_interpolate",
        "dtrain::batch_norm_relu", "dtrain::neighbour_max"}) {
    const auto op = dispatcher.findSchemaOrThrow(name, "");
    EXPECT_TRUE(op.hasKernelForDispatchKey(c10::DispatchKey::AutocastCPU)) << name;
    EXPECT_TRUE(op.hasKernelForDispatchKey(c10::DispatchKey::AutocastCUDA)) << name;
  }

  at::manual_seed(29);
  const at::Tensor xyz = at::rand({2, 40, 3}).to(at::kBFloat16);
  const at::Tensor centres = xyz.narrow(1, 0, 10);
  const at::Tensor features = at::randn({2, 5, 40}).to(at::kBFloat16);
  const at::Tensor tri_idx = random_index(40, {2, 7, 3});
  const at::Tensor weight = at::rand({2, 7, 3});
  const auto knn = dispatcher.findSchemaOrThrow("dtrain::knn", "")
                       .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&,
                                                                 const at::Tensor&, int64_t)>();
  const auto interpolate =
      dispatcher.findSchemaOrThrow("dtrain::three_interpolate", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>();
  const k::KnnResult float32 = k::knn(centres.to(at::kFloat), xyz.to(at::kFloat), 4);
  const at::Tensor interpolated = k::three_interpolate(features, tri_idx, weight);

  const dtrain::amp::AutocastGuard autocast(at::kCPU);
  const auto [idx, dist2] = knn.call(centres, xyz, 4);
  EXPECT_EQ(dist2.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(idx, float32.idx));
  EXPECT_TRUE(at::equal(dist2, float32.dist2));
  const at::Tensor got = interpolate.call(features, tri_idx, weight);
  EXPECT_EQ(got.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(got, interpolated));
}

// Zero sizes: an empty batch (B = 0), no channels (C = 0), no positions
// (M = 0, n = 0) or no neighbours (K = 0). Every forward and backward gives
// tensors of the documented shapes (an empty sum is 0), through autograd too.
struct EmptyCase {
  const char* name;
  int64_t batch, channels, points, m, kk;
};

constexpr EmptyCase kEmptyCases[] = {
    {"B = 0", 0, 4, 10, 6, 3}, {"C = 0", 2, 0, 10, 6, 3},       {"M = 0", 2, 4, 10, 0, 3},
    {"K = 0", 2, 4, 10, 6, 0}, {"B = 0, N = 0", 0, 4, 0, 6, 3},
};

TEST(FeatureOps, ZeroSizesGiveEmptyResultsAndGradients) {
  at::manual_seed(29);
  for (const EmptyCase& c : kEmptyCases) {
    const std::string what = c.name;
    const at::Tensor features =
        at::randn({c.batch, c.channels, c.points}, at::kDouble).requires_grad_(true);
    const int64_t high = std::max<int64_t>(c.points, 1);
    const at::Tensor idx = random_index(high, {c.batch, c.m});
    const at::Tensor group_idx = random_index(high, {c.batch, c.m, c.kk});
    const at::Tensor tri_idx = random_index(high, {c.batch, c.m, 3});
    const at::Tensor weight = at::rand({c.batch, c.m, 3}, at::kDouble).requires_grad_(true);
    if (c.points == 0 && c.batch * c.m > 0) {
      continue;  // indices into no points
    }

    const at::Tensor gathered = k::gather_points(features, idx);
    EXPECT_EQ(gathered.sizes(), (at::IntArrayRef{c.batch, c.channels, c.m})) << what;
    const at::Tensor grouped = k::group_points(features, group_idx);
    EXPECT_EQ(grouped.sizes(), (at::IntArrayRef{c.batch, c.channels, c.m, c.kk})) << what;
    const at::Tensor interpolated = k::three_interpolate(features, tri_idx, weight);
    EXPECT_EQ(interpolated.sizes(), (at::IntArrayRef{c.batch, c.channels, c.m})) << what;
    EXPECT_EQ(interpolated.scalar_type(), at::kDouble) << what;
    (gathered.sum() + grouped.sum() + interpolated.sum()).backward();
    ASSERT_TRUE(features.grad().defined()) << what;
    EXPECT_EQ(features.grad().sizes(), features.sizes()) << what;
    ASSERT_TRUE(weight.grad().defined()) << what;
    EXPECT_EQ(weight.grad().sizes(), weight.sizes()) << what;

    for (auto mode : {k::ScatterMode::kAtomic, k::ScatterMode::kDeterministic}) {
      const std::string with_mode = what + " mode " + std::to_string(static_cast<int>(mode));
      const at::Tensor gather_grad =
          k::gather_points_backward(at::randn({c.batch, c.channels, c.m}), idx, c.points, mode);
      EXPECT_EQ(gather_grad.sizes(), (at::IntArrayRef{c.batch, c.channels, c.points})) << with_mode;
      if (c.m == 0) {  // nothing to add: zeros
        EXPECT_TRUE(at::equal(gather_grad, at::zeros_like(gather_grad))) << with_mode;
      }
      const at::Tensor group_grad = k::group_points_backward(
          at::randn({c.batch, c.channels, c.m, c.kk}), group_idx, c.points, mode);
      EXPECT_EQ(group_grad.sizes(), (at::IntArrayRef{c.batch, c.channels, c.points})) << with_mode;
      if (c.m == 0 || c.kk == 0) {  // nothing to add: zeros
        EXPECT_TRUE(at::equal(group_grad, at::zeros_like(group_grad))) << with_mode;
      }
      const auto tri =
          k::three_interpolate_backward(at::randn({c.batch, c.channels, c.m}, at::kDouble),
                                        features.detach(), tri_idx, weight.detach(), mode);
      EXPECT_EQ(tri.features.sizes(), features.sizes()) << with_mode;
      EXPECT_EQ(tri.weight.sizes(), weight.sizes()) << with_mode;
      if (c.channels == 0) {  // a sum over no channels
        EXPECT_TRUE(at::equal(tri.weight, at::zeros_like(tri.weight))) << with_mode;
      }
    }
  }
}

TEST(FeatureOps, BadInputsNameTheArgument) {
  const at::Tensor f = at::randn({2, 3, 10});
  expect_error<c10::Error>(
      [&] {
        k::gather_points(f, random_index(10, {2, 4}).to(at::kInt));
      },
      "gather_points: idx must be int64, got Int");
  expect_error<c10::Error>(
      [&] {
        k::gather_points(f, random_index(10, {2, 4, 1}));
      },
      "gather_points: idx must have shape (B, M), got shape [2, 4, 1]");
  expect_error<c10::Error>(
      [&] {
        k::gather_points(f, random_index(10, {3, 4}));
      },
      "gather_points: idx has batch size 3");
  expect_error<c10::Error>(
      [&] {
        k::gather_points(f, at::full({2, 4}, 10, at::kLong));
      },
      "gather_points: idx must hold indices in [0, 10), got values in [10, 10]");
  expect_error<c10::Error>(
      [&] {
        k::gather_points(f, at::full({2, 4}, -1, at::kLong));
      },
      "got values in [-1, -1]");
  expect_error<c10::Error>(
      [&] {
        k::gather_points(f.view({6, 10}), random_index(10, {6, 4}));
      },
      "gather_points: features must have shape (B, C, N), got shape [6, 10]");
  expect_error<c10::Error>(
      [&] {
        k::group_points(f.to(at::kLong), random_index(10, {2, 4, 2}));
      },
      "group_points: features must be float32, float64, float16 or bfloat16");
  expect_error<c10::Error>(
      [&] {
        k::group_points(f, random_index(10, {2, 4}));
      },
      "group_points: idx must have shape (B, M, K)");
  expect_error<c10::Error>(
      [&] {
        k::three_interpolate(f, random_index(10, {2, 4, 2}), at::rand({2, 4, 2}));
      },
      "three_interpolate: idx must have shape (B, n, 3), got shape [2, 4, 2]");
  expect_error<c10::Error>(
      [&] {
        k::three_interpolate(f, random_index(10, {2, 4, 3}), at::rand({2, 5, 3}));
      },
      "three_interpolate: weight must have the shape of idx [2, 4, 3], got [2, 5, 3]");
  expect_error<c10::Error>(
      [&] {
        k::gather_points_backward(at::randn({2, 3, 4}), random_index(10, {2, 5}), 10,
                                  k::ScatterMode::kAtomic);
      },
      "gather_points_backward: idx must have shape (B, C, M) and (B, M) matching grad_out");
}

// Sparse tensors: named, not LibTorch's "unsupported memory format".
TEST(FeatureOps, SparseInputsAreNamed) {
  const at::Tensor f = at::randn({2, 3, 10});
  const at::Tensor idx = random_index(10, {2, 4});
  expect_error<c10::Error>([&] { k::gather_points(f.to_sparse(), idx); },
                           "gather_points: features must be a strided (dense) tensor, got Sparse");
  expect_error<c10::Error>(
      [&] {
        k::group_points(f, random_index(10, {2, 4, 2}).to_sparse());
      },
      "group_points: idx must be a strided (dense) tensor, got Sparse");
  const at::Tensor tri_idx = random_index(10, {2, 4, 3});
  expect_error<c10::Error>(
      [&] {
        k::three_interpolate(f, tri_idx, at::rand({2, 4, 3}).to_sparse());
      },
      "three_interpolate: weight must be a strided (dense) tensor, got Sparse");
  expect_error<c10::Error>(
      [&] {
        k::gather_points_backward(at::randn({2, 3, 4}).to_sparse(), idx, 10,
                                  k::ScatterMode::kAtomic);
      },
      "gather_points_backward: grad_out must be a strided (dense) tensor, got Sparse");
  expect_error<c10::Error>(
      [&] {
        k::three_interpolate_backward(at::randn({2, 3, 4}).to_sparse(), f, tri_idx,
                                      at::rand({2, 4, 3}), k::ScatterMode::kAtomic);
      },
      "three_interpolate_backward: grad_out must be a strided (dense) tensor, got Sparse");
}

}  // namespace
