// AutocastGuard: what autocast does inside it, that it restores the state it
// found (nesting, fp32 regions), that the cast cache lives exactly as long
// as the outermost guard, and the dtype checks.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/util/errors.h"
#include "expect_error.h"

namespace {

namespace amp = dtrain::amp;

at::Tensor matmul_result() {
  return at::mm(at::ones({2, 3}), at::ones({3, 2}));
}

TEST(AutocastGuard, CpuDefaultsToBfloat16AndRestores) {
  ASSERT_FALSE(amp::is_autocast_enabled(at::kCPU));
  const at::ScalarType before = amp::autocast_dtype(at::kCPU);
  {
    amp::AutocastGuard autocast(at::kCPU);
    EXPECT_TRUE(amp::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(amp::autocast_dtype(at::kCPU), at::kBFloat16);
    EXPECT_EQ(matmul_result().scalar_type(), at::kBFloat16);
    // Ops on autocast's fp32 list stay fp32.
    EXPECT_EQ(at::mse_loss(at::ones({4}), at::zeros({4})).scalar_type(), at::kFloat);
    // CUDA's switch is separate.
    EXPECT_FALSE(amp::is_autocast_enabled(at::kCUDA));
  }
  EXPECT_FALSE(amp::is_autocast_enabled(at::kCPU));
  EXPECT_EQ(amp::autocast_dtype(at::kCPU), before);
  EXPECT_EQ(matmul_result().scalar_type(), at::kFloat);
}

TEST(AutocastGuard, NestedGuardsRestoreTheOuterState) {
  amp::AutocastGuard outer(at::kCPU);
  {
    amp::AutocastGuard fp32_region(amp::AutocastOptions(at::kCPU).enabled(false));
    EXPECT_FALSE(amp::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(matmul_result().scalar_type(), at::kFloat);
    {
      amp::AutocastGuard half(amp::AutocastOptions(at::kCPU).dtype(at::kHalf));
      EXPECT_EQ(matmul_result().scalar_type(), at::kHalf);
    }
    EXPECT_FALSE(amp::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(amp::autocast_dtype(at::kCPU), at::kBFloat16);
  }
  EXPECT_TRUE(amp::is_autocast_enabled(at::kCPU));
  EXPECT_EQ(matmul_result().scalar_type(), at::kBFloat16);
}

TEST(AutocastGuard, CudaStateIsSetWithoutTouchingCpu) {
  // Only thread-local switches: no device is needed to set them.
  {
    amp::AutocastGuard autocast(at::kCUDA);
    EXPECT_TRUE(amp::is_autocast_enabled(at::kCUDA));
    EXPECT_EQ(amp::autocast_dtype(at::kCUDA), at::kHalf);
    EXPECT_FALSE(amp::is_autocast_enabled(at::kCPU));
    amp::AutocastGuard bf16(amp::AutocastOptions(at::kCUDA).dtype(at::kBFloat16));
    EXPECT_EQ(amp::autocast_dtype(at::kCUDA), at::kBFloat16);
  }
  EXPECT_FALSE(amp::is_autocast_enabled(at::kCUDA));
}

// The cache holds the low-precision copy of a leaf weight. A weight updated
// in place between guards (an optimizer step) must be cast again; within one
// outermost guard the copy is reused, even across inner guards.
TEST(AutocastGuard, CastCacheIsClearedWhenTheOutermostGuardEnds) {
  at::Tensor weight = at::full({4}, 1.0f).set_requires_grad(true);
  auto cast = [&] { return at::autocast::cached_cast(at::kBFloat16, weight, at::kCPU); };
  auto bump = [&] {
    at::NoGradGuard no_grad;
    weight.add_(1.0f);
  };
  {
    amp::AutocastGuard outer(at::kCPU);
    const at::Tensor first = cast();
    { amp::AutocastGuard inner(at::kCPU); }
    bump();  // 2.0 now, but the cached copy is still the one made at 1.0
    const at::Tensor second = cast();
    EXPECT_TRUE(second.is_same(first));
    EXPECT_EQ(second[0].item<float>(), 1.0f);
  }
  bump();  // 3.0
  amp::AutocastGuard next(at::kCPU);
  const at::Tensor fresh = cast();
  EXPECT_EQ(fresh.scalar_type(), at::kBFloat16);
  EXPECT_EQ(fresh[0].item<float>(), 3.0f);
}

TEST(AutocastGuard, CacheCanBeDisabled) {
  at::Tensor weight = at::full({4}, 1.0f).set_requires_grad(true);
  amp::AutocastGuard autocast(amp::AutocastOptions(at::kCPU).cache_enabled(false));
  EXPECT_FALSE(at::autocast::is_autocast_cache_enabled());
  const at::Tensor a = at::autocast::cached_cast(at::kBFloat16, weight, at::kCPU);
  const at::Tensor b = at::autocast::cached_cast(at::kBFloat16, weight, at::kCPU);
  EXPECT_FALSE(a.is_same(b));
}

void expect_error(const amp::AutocastOptions& options, const std::string& fragment) {
  const bool enabled_before = amp::is_autocast_enabled(at::kCPU);
  dtrain::testing::expect_error([&] { amp::AutocastGuard guard(options); }, fragment);
  // A guard that failed to start changed nothing.
  EXPECT_EQ(amp::is_autocast_enabled(at::kCPU), enabled_before);
}

TEST(AutocastGuard, RejectsUnsupportedDtypesAndDevices) {
  expect_error(amp::AutocastOptions(at::kCPU).dtype(at::kDouble),
               "dtype for cpu must be BFloat16 or Half, got Double");
  expect_error(amp::AutocastOptions(at::kCUDA).dtype(at::kFloat),
               "dtype for cuda must be BFloat16 or Half, got Float");
  expect_error(amp::AutocastOptions(at::kMeta), "device_type must be cpu or cuda, got meta");
}

}  // namespace
