// The PointNet++ ops on CUDA against the CPU kernels: indices exactly, features
// within tolerance (float32, float16, bfloat16), backward in both scatter
// modes, and the deterministic mode repeating bitwise. Skips, saying why,
// where no CUDA device is visible.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_skip.h"
#include "dtrain/config.h"
#include "dtrain/kernels/pointnet2.h"
#include "expect_error.h"
#include "fps_clouds.h"
#include "test_pointnet2_reference.h"

namespace {

namespace k = dtrain::kernels;

bool cuda_ready() {
  return DTRAIN_WITH_CUDA && at::hasCUDA();
}

at::Tensor cuda(const at::Tensor& t) {
  return t.to(at::kCUDA);
}

void expect_same(const at::Tensor& gpu, const at::Tensor& cpu, const std::string& what) {
  ASSERT_TRUE(gpu.is_cuda()) << what;
  EXPECT_TRUE(at::equal(gpu.cpu(), cpu)) << what;
}

TEST(PointNet2Cuda, FurthestPointSampleAgreesExactly) {
  SKIP_WITHOUT_CUDA();
  at::manual_seed(31);
  // The register kernel (N <= 8192), the chunk kernel (beyond), and
  // adversarial clouds.
  for (int64_t n : {1, 33, 1000, 4096, 20000, 100000}) {
    const at::Tensor xyz = at::rand({2, n, 3});
    const int64_t npoint = std::min<int64_t>(n, 256);
    expect_same(k::furthest_point_sample(cuda(xyz), npoint, n / 2),
                k::furthest_point_sample(xyz, npoint, n / 2), "n=" + std::to_string(n));
  }
  const at::Tensor dup = at::rand({2, 8, 3}).repeat({1, 8, 1});
  expect_same(k::furthest_point_sample(cuda(dup), 64), k::furthest_point_sample(dup, 64),
              "duplicates");
  const at::Tensor zeros = at::zeros({1, 100, 3});
  expect_same(k::furthest_point_sample(cuda(zeros), 100), k::furthest_point_sample(zeros, 100),
              "origin");
  const at::Tensor half = at::randn({2, 500, 3}).to(at::kHalf);
  expect_same(k::furthest_point_sample(cuda(half), 100), k::furthest_point_sample(half, 100),
              "float16");
}

// The picks of the CUDA kernel `kernel`.
at::Tensor forced_fps(k::FpsKernel kernel, const at::Tensor& xyz, int64_t npoint,
                      int64_t start = 0) {
  return k::furthest_point_sample(xyz, npoint, start, k::FpsOptions().cuda_kernel(kernel));
}

// Every default FPS path agrees with the CPU: the register kernel (Morton
// order and warps skipped by their bounding box) and the chunk kernel
// (sorted by cell, chunks skipped by their bounding box) on random clouds,
// clouds of ties and duplicates, clumps, and clouds whose warps hold only
// padding; and the one-block kernels, forced.
TEST(PointNet2Cuda, FurthestPointSampleEveryPathAgrees) {
  SKIP_WITHOUT_CUDA();
  at::manual_seed(34);
  dtrain::test::expect_cpu_picks(dtrain::test::uniform_fps_clouds(), "default",
                                 [](const at::Tensor& xyz, int64_t npoint, int64_t start) {
                                   return k::furthest_point_sample(xyz, npoint, start);
                                 });
  const std::vector<dtrain::test::FpsCloud> clouds = dtrain::test::adversarial_fps_clouds();
  for (const auto& [kernel, name] :
       {std::pair{k::FpsKernel::kAuto, "auto"}, std::pair{k::FpsKernel::kChunks, "chunks"}}) {
    dtrain::test::expect_cpu_picks(clouds, name,
                                   [kernel](const at::Tensor& xyz, int64_t npoint, int64_t start) {
                                     return forced_fps(kernel, xyz, npoint, start);
                                   });
  }
  // Beyond 8192 points the default is the chunk kernel.
  const at::Tensor big_clumps = dtrain::test::clumps_of(2, 40000);
  expect_same(k::furthest_point_sample(cuda(big_clumps), 3000, 123),
              k::furthest_point_sample(big_clumps, 3000, 123), "40000 points in clumps");
  const at::Tensor xyz = at::rand({3, 4096, 3});
  const at::Tensor expected = k::furthest_point_sample(xyz, 300);
  for (const auto& [kernel, name] : {std::pair{k::FpsKernel::kRegisters, "registers"},
                                     std::pair{k::FpsKernel::kChunks, "chunks"},
                                     std::pair{k::FpsKernel::kOneBlockShared, "shared"},
                                     std::pair{k::FpsKernel::kOneBlockGlobal, "global"}}) {
    expect_same(forced_fps(kernel, cuda(xyz), 300), expected, name);
  }
  dtrain::testing::expect_error<std::exception>(
      [&] {
        forced_fps(k::FpsKernel::kRegisters, cuda(at::rand({1, 9000, 3})), 10);
      },
      "FpsKernel::kRegisters: the register kernel takes at most 8192 points");
}

TEST(PointNet2Cuda, FurthestPointSampleMillionPoints) {
  SKIP_WITHOUT_CUDA();
  at::manual_seed(32);
  const at::Tensor xyz = at::rand({1, 1 << 20, 3});
  expect_same(k::furthest_point_sample(cuda(xyz), 64), k::furthest_point_sample(xyz, 64),
              "N = 2^20");
}

TEST(PointNet2Cuda, NeighbourIndicesAgreeExactly) {
  SKIP_WITHOUT_CUDA();
  at::manual_seed(33);
  const at::Tensor x = at::rand({3, 2000, 3});
  const at::Tensor q = at::rand({3, 300, 3});
  for (double radius : {0.02, 0.1, 0.3}) {
    const auto gpu = k::ball_query(cuda(q), cuda(x), radius, 32);
    const auto cpu = k::ball_query(q, x, radius, 32);
    expect_same(gpu.idx, cpu.idx, "ball_query idx");
    expect_same(gpu.count, cpu.count, "ball_query count");
  }
  const auto empty = k::ball_query(cuda(q + 10), cuda(x), 0.1, 8);
  expect_same(empty.count, at::zeros({3, 300}, at::kLong), "empty balls");
  // Every list size: registers of 8, 16 and 32 entries (k below and at each
  // size) and the list in global memory beyond 32.
  for (int64_t kk : {1, 5, 8, 9, 16, 20, 32, 33, 100}) {
    const auto gpu = k::knn(cuda(q), cuda(x), kk);
    const auto cpu = k::knn(q, x, kk);
    const std::string what = "knn k=" + std::to_string(kk);
    expect_same(gpu.idx, cpu.idx, what + " idx");
    expect_same(gpu.dist2, cpu.dist2, what + " dist2");
  }
  // Ties: every point at the origin; a coarse grid (many equal distances).
  const auto zeros = at::zeros({1, 50, 3});
  const auto grid = at::floor(at::rand({2, 400, 3}) * 4);
  for (int64_t kk : {3, 10, 24, 40}) {
    const std::string what = "knn ties k=" + std::to_string(kk);
    expect_same(k::knn(cuda(zeros), cuda(zeros), kk).idx, k::knn(zeros, zeros, kk).idx, what);
    expect_same(k::knn(cuda(grid), cuda(grid), kk).idx, k::knn(grid, grid, kk).idx, what);
  }
  const auto gpu3 = k::three_nn(cuda(q), cuda(x));
  const auto cpu3 = k::three_nn(q, x);
  expect_same(gpu3.idx, cpu3.idx, "three_nn idx");
  expect_same(gpu3.dist2, cpu3.dist2, "three_nn dist2");
}

// Note [NaN distances rank as +inf]: a NaN distance comes after every
// finite one, tied with +inf by index, on every list size (registers of 8,
// 16, 32 entries and the list in global memory) and in three-NN; the rows
// hold the NaN itself. CUDA against the CPU and the brute-force reference.
TEST(PointNet2Cuda, NaNDistancesAgreeExactly) {
  SKIP_WITHOUT_CUDA();
  at::manual_seed(36);
  at::Tensor scattered = at::randn({2, 300, 3});
  for (int64_t j : {0, 1, 17, 64, 150, 299}) {
    scattered.index_put_({0, j, j % 3}, NAN);
  }
  scattered.index_put_({1, 5, 0}, NAN);
  at::Tensor nan_first = at::rand({1, 300, 3});  // the lists fill with NaN first
  nan_first.slice(1, 0, 100).fill_(NAN);
  at::Tensor with_inf = at::rand({1, 120, 3});  // +inf and NaN distances tie
  with_inf.index_put_({0, 3, 1}, 1e30f);
  with_inf.index_put_({0, 9, 0}, NAN);
  with_inf.index_put_({0, 12, 2}, -1e30f);
  with_inf.index_put_({0, 40, 1}, NAN);
  at::Tensor nan_queries = at::rand({2, 6, 3});
  nan_queries.index_put_({0, 2, 1}, NAN);
  nan_queries.index_put_({1, 0, 0}, NAN);
  const at::Tensor queries = at::randn({2, 40, 3});
  struct Case {
    const char* name;
    at::Tensor queries;
    at::Tensor points;
  };
  const std::vector<Case> cases = {
      {"scattered NaN points", queries, scattered},
      {"first 100 points NaN", queries.slice(0, 0, 1), nan_first},
      {"NaN and +inf distances", queries.slice(0, 0, 1), with_inf},
      {"every point NaN", queries.slice(0, 0, 1), at::full({1, 120, 3}, NAN)},
      {"NaN queries", nan_queries, at::rand({2, 120, 3})},
  };
  for (const Case& c : cases) {
    for (int64_t kk : {1, 5, 8, 9, 16, 20, 32, 33, 100}) {
      const std::string what = std::string(c.name) + " knn k=" + std::to_string(kk);
      const auto gpu = k::knn(cuda(c.queries), cuda(c.points), kk);
      const auto cpu = k::knn(c.queries, c.points, kk);
      const auto [ref_idx, ref_dist] = dtrain::test::ref_knn(c.queries, c.points, kk);
      expect_same(gpu.idx, cpu.idx, what + " idx");
      EXPECT_TRUE(at::equal(cpu.idx, ref_idx)) << what << " idx (CPU against the reference)";
      EXPECT_TRUE(dtrain::test::equal_with_nan(gpu.dist2.cpu(), cpu.dist2)) << what << " dist2";
      EXPECT_TRUE(dtrain::test::equal_with_nan(cpu.dist2, ref_dist)) << what << " dist2 (CPU)";
    }
    const auto gpu3 = k::three_nn(cuda(c.queries), cuda(c.points));
    const auto cpu3 = k::three_nn(c.queries, c.points);
    expect_same(gpu3.idx, cpu3.idx, std::string(c.name) + " three_nn idx");
    EXPECT_TRUE(dtrain::test::equal_with_nan(gpu3.dist2.cpu(), cpu3.dist2))
        << c.name << " three_nn dist2";
  }
}

// An empty batch on CUDA: every op and backward (both scatter modes) gives
// empty tensors of the documented shapes and launches nothing.
TEST(PointNet2Cuda, EmptyBatchGivesEmptyResults) {
  SKIP_WITHOUT_CUDA();
  const at::Tensor xyz = cuda(at::rand({0, 10, 3}));
  const at::Tensor q = cuda(at::rand({0, 4, 3}));
  EXPECT_EQ(k::furthest_point_sample(xyz, 3).sizes(), (at::IntArrayRef{0, 3}));
  EXPECT_EQ(k::ball_query(q, xyz, 0.5, 8).idx.sizes(), (at::IntArrayRef{0, 4, 8}));
  EXPECT_EQ(k::knn(q, xyz, 5).dist2.sizes(), (at::IntArrayRef{0, 4, 5}));
  EXPECT_EQ(k::three_nn(q, xyz).idx.sizes(), (at::IntArrayRef{0, 4, 3}));
  const at::Tensor f = cuda(at::randn({0, 6, 10}));
  const at::Tensor idx = cuda(at::zeros({0, 4}, at::kLong));
  const at::Tensor gidx = cuda(at::zeros({0, 4, 5}, at::kLong));
  const at::Tensor tidx = cuda(at::zeros({0, 4, 3}, at::kLong));
  const at::Tensor w = cuda(at::rand({0, 4, 3}));
  EXPECT_EQ(k::gather_points(f, idx).sizes(), (at::IntArrayRef{0, 6, 4}));
  EXPECT_EQ(k::group_points(f, gidx).sizes(), (at::IntArrayRef{0, 6, 4, 5}));
  EXPECT_EQ(k::three_interpolate(f, tidx, w).sizes(), (at::IntArrayRef{0, 6, 4}));
  for (auto mode : {k::ScatterMode::kAtomic, k::ScatterMode::kDeterministic}) {
    EXPECT_EQ(k::gather_points_backward(cuda(at::randn({0, 6, 4})), idx, 10, mode).sizes(),
              (at::IntArrayRef{0, 6, 10}));
    EXPECT_EQ(k::group_points_backward(cuda(at::randn({0, 6, 4, 5})), gidx, 10, mode).sizes(),
              (at::IntArrayRef{0, 6, 10}));
    const auto tri = k::three_interpolate_backward(cuda(at::randn({0, 6, 4})), f, tidx, w, mode);
    EXPECT_EQ(tri.features.sizes(), (at::IntArrayRef{0, 6, 10}));
    EXPECT_EQ(tri.weight.sizes(), (at::IntArrayRef{0, 4, 3}));
  }
  // No channels, with a batch: the weight gradient is a sum over no
  // channels (zeros), and the feature gradient is empty.
  const at::Tensor no_channels = cuda(at::randn({2, 0, 10}));
  const at::Tensor tidx2 = cuda(at::randint(0, 10, {2, 4, 3}, at::kLong));
  const at::Tensor w2 = cuda(at::rand({2, 4, 3}));
  EXPECT_EQ(k::three_interpolate(no_channels, tidx2, w2).sizes(), (at::IntArrayRef{2, 0, 4}));
  const auto tri = k::three_interpolate_backward(cuda(at::randn({2, 0, 4})), no_channels, tidx2, w2,
                                                 k::ScatterMode::kDeterministic);
  EXPECT_TRUE(at::equal(tri.weight.cpu(), at::zeros({2, 4, 3})));
}

class PointNet2CudaDtypes : public ::testing::TestWithParam<at::ScalarType> {
 protected:
  void SetUp() override { SKIP_WITHOUT_CUDA(); }
  double tolerance() const {
    switch (GetParam()) {
      case at::kHalf:
        return 2e-3;
      case at::kBFloat16:
        return 2e-2;
      case at::kDouble:
        return 1e-12;
      default:
        return 1e-5;
    }
  }
};

TEST_P(PointNet2CudaDtypes, FeatureOpsAgreeWithCpu) {
  at::manual_seed(34);
  const auto dtype = GetParam();
  const double tol = tolerance();
  const at::Tensor f = at::randn({2, 16, 500}).to(dtype);
  const at::Tensor idx = at::randint(0, 500, {2, 128}, at::kLong);
  expect_same(k::gather_points(cuda(f), cuda(idx)), k::gather_points(f, idx), "gather");
  const at::Tensor gidx = at::randint(0, 500, {2, 64, 32}, at::kLong);
  expect_same(k::group_points(cuda(f), cuda(gidx)), k::group_points(f, gidx), "group");
  const at::Tensor tidx = at::randint(0, 500, {2, 700, 3}, at::kLong);
  const at::Tensor w = at::rand({2, 700, 3}).to(dtype);
  const at::Tensor interp_gpu = k::three_interpolate(cuda(f), cuda(tidx), cuda(w));
  const at::Tensor interp_cpu = k::three_interpolate(f, tidx, w);
  EXPECT_TRUE(at::allclose(interp_gpu.cpu().to(at::kDouble), interp_cpu.to(at::kDouble), tol, tol));
  // float32 weights with features of any dtype (Note [Interpolation weights
  // in the accumulation type] in src/dispatch.h): the CPU's float32 sums in
  // its order, rounded once, and a float32 weight gradient.
  const at::Tensor w32 = at::rand({2, 700, 3});
  EXPECT_TRUE(at::equal(k::three_interpolate(cuda(f), cuda(tidx), cuda(w32)).cpu(),
                        k::three_interpolate(f, tidx, w32)));
  // Backward: both modes against the CPU (which sums in index order, as the
  // deterministic CUDA path does).
  const at::Tensor g = at::randn({2, 16, 64, 32}).to(dtype);
  const at::Tensor cpu_grad =
      k::group_points_backward(g, gidx, 500, k::ScatterMode::kDeterministic);
  for (auto mode : {k::ScatterMode::kAtomic, k::ScatterMode::kDeterministic}) {
    const at::Tensor gpu_grad = k::group_points_backward(cuda(g), cuda(gidx), 500, mode);
    EXPECT_TRUE(
        at::allclose(gpu_grad.cpu().to(at::kDouble), cpu_grad.to(at::kDouble), 10 * tol, 10 * tol))
        << "mode " << static_cast<int>(mode);
  }
  const at::Tensor gi = at::randn({2, 16, 700}).to(dtype);
  const auto cpu_tri = k::three_interpolate_backward(gi, f, tidx, w, k::ScatterMode::kAtomic);
  const auto gpu_tri = k::three_interpolate_backward(cuda(gi), cuda(f), cuda(tidx), cuda(w),
                                                     k::ScatterMode::kAtomic);
  EXPECT_TRUE(at::allclose(gpu_tri.features.cpu().to(at::kDouble), cpu_tri.features.to(at::kDouble),
                           10 * tol, 10 * tol));
  EXPECT_TRUE(at::allclose(gpu_tri.weight.cpu().to(at::kDouble), cpu_tri.weight.to(at::kDouble),
                           10 * tol, 10 * tol));
  const auto cpu_tri32 = k::three_interpolate_backward(gi, f, tidx, w32, k::ScatterMode::kAtomic);
  const auto gpu_tri32 = k::three_interpolate_backward(cuda(gi), cuda(f), cuda(tidx), cuda(w32),
                                                       k::ScatterMode::kDeterministic);
  EXPECT_EQ(gpu_tri32.weight.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::allclose(gpu_tri32.weight.cpu(), cpu_tri32.weight, 1e-6, 1e-6));
  EXPECT_TRUE(at::equal(gpu_tri32.features.cpu(), cpu_tri32.features));
}

// Point-major features (channels innermost, as dtrain's set abstraction
// passes them): the CPU groups them as rows into a channels-last result,
// CUDA makes them contiguous first. Same values, and the same gradients
// through autograd.
TEST_P(PointNet2CudaDtypes, PointMajorFeaturesAgreeWithCpu) {
  at::manual_seed(36);
  const auto dtype = GetParam();
  const at::Tensor f = at::randn({2, 500, 70}).to(dtype).transpose(1, 2);  // (2, 70, 500)
  const at::Tensor gidx = at::randint(0, 500, {2, 64, 32}, at::kLong);
  expect_same(k::group_points(cuda(f), cuda(gidx)), k::group_points(f, gidx), "group");
  const at::Tensor idx = at::randint(0, 500, {2, 128}, at::kLong);
  expect_same(k::gather_points(cuda(f), cuda(idx)), k::gather_points(f, idx), "gather");
  const at::Tensor probe = at::randn({2, 70, 64, 32}).to(dtype);
  const at::Tensor on_cpu = f.detach().requires_grad_(true);
  const at::Tensor on_gpu = cuda(f).detach().requires_grad_(true);
  (k::group_points(on_cpu, gidx) * probe).sum().backward();
  (k::group_points(on_gpu, cuda(gidx)) * cuda(probe)).sum().backward();
  EXPECT_TRUE(at::allclose(on_gpu.grad().cpu().to(at::kDouble), on_cpu.grad().to(at::kDouble),
                           10 * tolerance(), 10 * tolerance()));
}

TEST_P(PointNet2CudaDtypes, DeterministicBackwardRepeatsBitwise) {
  at::manual_seed(35);
  const auto dtype = GetParam();
  const at::Tensor idx = cuda(at::randint(0, 64, {4, 20000}, at::kLong));  // heavy collisions
  const at::Tensor g = cuda(at::randn({4, 8, 20000}).to(dtype));
  const at::Tensor first = k::gather_points_backward(g, idx, 64, k::ScatterMode::kDeterministic);
  for (int repeat = 0; repeat < 3; ++repeat) {
    EXPECT_TRUE(
        at::equal(first, k::gather_points_backward(g, idx, 64, k::ScatterMode::kDeterministic)));
  }
  // Same order as the CPU's row-owner sums, float32 accumulation: bitwise.
  EXPECT_TRUE(at::equal(first.cpu(), k::gather_points_backward(g.cpu(), idx.cpu(), 64,
                                                               k::ScatterMode::kDeterministic)));
}

INSTANTIATE_TEST_SUITE_P(Gpu, PointNet2CudaDtypes,
                         ::testing::Values(at::kFloat, at::kHalf, at::kBFloat16, at::kDouble));

TEST(PointNet2CudaDevices, MixedDevicesAreRejected) {
  if (!cuda_ready()) {
    GTEST_SKIP() << "no CUDA device visible";
  }
  EXPECT_THROW(k::ball_query(cuda(at::rand({1, 4, 3})), at::rand({1, 8, 3}), 0.1, 4), c10::Error);
  EXPECT_THROW(k::gather_points(cuda(at::rand({1, 2, 8})), at::zeros({1, 3}, at::kLong)),
               c10::Error);
}

}  // namespace
