// furthest_point_sample on CPU against the brute-force reference, on random
// and adversarial clouds, and its input checks.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "dtrain/kernels/pointnet2.h"
#include "test_pointnet2_reference.h"

namespace {

using dtrain::kernels::furthest_point_sample;
using dtrain::test::ref_furthest_point_sample;

at::Tensor longs(std::initializer_list<int64_t> values) {
  return at::tensor(std::vector<int64_t>(values), at::TensorOptions().dtype(at::kLong));
}

void expect_distinct_rows(const at::Tensor& idx) {
  for (int64_t b = 0; b < idx.size(0); ++b) {
    const at::Tensor row = idx[b].contiguous();
    std::set<int64_t> seen(row.const_data_ptr<int64_t>(),
                           row.const_data_ptr<int64_t>() + row.numel());
    EXPECT_EQ(static_cast<int64_t>(seen.size()), row.numel()) << "duplicates in row " << b;
  }
}

TEST(FurthestPointSample, MatchesReferenceOnRandomClouds) {
  at::manual_seed(3);
  // 200 points exercise the 8-wide SIMD path and its scalar tail (200 = 25 * 8,
  // 203 leaves a tail of 3).
  for (int64_t n : {1, 7, 200, 203}) {
    const at::Tensor xyz = at::rand({3, n, 3});
    const int64_t npoint = std::min<int64_t>(n, 40);
    for (int64_t start : {int64_t{0}, n - 1}) {
      const at::Tensor got = furthest_point_sample(xyz, npoint, start);
      EXPECT_EQ(got.sizes(), (at::IntArrayRef{3, npoint}));
      EXPECT_EQ(got.scalar_type(), at::kLong);
      EXPECT_TRUE(at::equal(got, ref_furthest_point_sample(xyz, npoint, start)))
          << "n=" << n << " start=" << start;
      expect_distinct_rows(got);
    }
  }
}

// A batch smaller than the thread pool splits each large cloud across the
// threads (Note [FPS across threads]); the picks must equal one thread's,
// also when every distance ties with copies in other threads' chunks.
TEST(FurthestPointSample, LargeCloudSplitAcrossThreadsMatchesReference) {
  const int threads = at::get_num_threads();
  at::set_num_threads(4);
  at::manual_seed(4);
  const at::Tensor random = at::rand({1, 70001, 3});
  const at::Tensor copies = at::rand({1, 9, 3}).repeat({1, 8000, 1});  // 72000 points, 9 places
  for (const at::Tensor& xyz : {random, copies}) {
    for (int64_t start : {int64_t{0}, int64_t{50000}}) {
      const at::Tensor got = furthest_point_sample(xyz, 30, start);
      EXPECT_TRUE(at::equal(got, ref_furthest_point_sample(xyz, 30, start))) << "start " << start;
      expect_distinct_rows(got);
    }
  }
  at::set_num_threads(threads);
}

// A 16^3 grid of points, one cloud: equal distances everywhere.
at::Tensor grid_16() {
  const at::Tensor cells = at::arange(4096, at::kInt);
  return at::stack({cells % 16, cells.div(16, "floor") % 16, cells.div(256, "floor")}, 1)
      .to(at::kFloat)
      .unsqueeze(0);
}

at::Tensor fps_on(dtrain::kernels::CpuFpsPath path, const at::Tensor& xyz, int64_t npoint,
                  int64_t start) {
  return furthest_point_sample(xyz, npoint, start, dtrain::kernels::FpsOptions().cpu_path(path));
}

// The spatial kernel (Note [FPS in spatial chunks on the CPU]) against the
// brute-force reference, and the default path takes it for a large cloud
// with many picks.
TEST(FurthestPointSample, SpatialChunksMatchReference) {
  at::manual_seed(5);
  const at::Tensor grid = grid_16();
  for (const at::Tensor& xyz :
       {at::rand({2, 2500, 3}), grid, at::rand({1, 7, 3}).repeat({1, 400, 1})}) {
    for (int64_t start : {int64_t{0}, xyz.size(1) - 1}) {
      const at::Tensor expected = ref_furthest_point_sample(xyz, 150, start);
      EXPECT_TRUE(
          at::equal(fps_on(dtrain::kernels::CpuFpsPath::kSpatial, xyz, 150, start), expected))
          << "n=" << xyz.size(1) << " start=" << start;
    }
  }
  const at::Tensor xyz = at::rand({1, 3000, 3});
  EXPECT_TRUE(
      at::equal(furthest_point_sample(xyz, 160, 0), ref_furthest_point_sample(xyz, 160, 0)));
}

// The spatial kernel equals the plain loop to the last pick on clouds that
// stress its box tests and ties: a grid (equal distances everywhere),
// repeated points, far-apart clumps, a flat plane (a box of zero extent),
// every point at the origin, and clouds that do not fill their last chunk.
TEST(FurthestPointSample, SpatialChunksEqualThePlainLoop) {
  at::manual_seed(6);
  const at::Tensor grid = grid_16();
  const at::Tensor clumps =
      (at::rand({2, 8000, 3}) * 0.01 +
       at::arange(8000).div(1000, "floor").to(at::kFloat).view({1, -1, 1}) * 3)
          .contiguous();
  const at::Tensor plane = at::cat({at::rand({1, 5000, 2}), at::zeros({1, 5000, 1})}, 2);
  struct Case {
    const char* name;
    at::Tensor xyz;
    int64_t npoint;
  };
  const std::vector<Case> cases = {
      {"grid", grid, 4096},
      {"8 points repeated", at::rand({1, 8, 3}).repeat({1, 600, 1}), 4800},
      {"clumps", clumps, 8000},
      {"plane", plane, 2000},
      {"origin", at::zeros({1, 3000, 3}), 3000},
      {"random 20001", at::rand({2, 20001, 3}), 3000},
      {"random 70001", at::rand({1, 70001, 3}), 1000},
      // A NaN and an infinite coordinate: the spatial kernel hands the cloud
      // to the plain loop (NaN distances do not order the same way).
      {"non-finite",
       at::rand({1, 3000, 3}).index_put_({0, 7, 1}, NAN).index_put_({0, 9, 0}, INFINITY), 500},
  };
  for (const Case& c : cases) {
    for (int64_t start : {int64_t{0}, c.xyz.size(1) - 1}) {
      EXPECT_TRUE(at::equal(fps_on(dtrain::kernels::CpuFpsPath::kSpatial, c.xyz, c.npoint, start),
                            fps_on(dtrain::kernels::CpuFpsPath::kPlain, c.xyz, c.npoint, start)))
          << c.name << " start=" << start;
    }
  }
}

// The path is the caller's option, never an environment variable read on
// each call (the variables that once forced a path change nothing).
TEST(FurthestPointSample, ReadsNoEnvironmentVariable) {
  const at::Tensor xyz = at::rand({2, 3000, 3});
  const at::Tensor expected = furthest_point_sample(xyz, 200, 0);
  setenv("DTRAIN_CPU_FPS", "fastest", 1);
  setenv("DTRAIN_CUDA_FPS", "fastest", 1);
  EXPECT_TRUE(at::equal(furthest_point_sample(xyz, 200, 0), expected));
  unsetenv("DTRAIN_CPU_FPS");
  unsetenv("DTRAIN_CUDA_FPS");
}

// Every forced CPU path gives the default's picks.
TEST(FurthestPointSample, EveryCpuPathAgrees) {
  using dtrain::kernels::CpuFpsPath;
  const at::Tensor xyz = at::rand({2, 3000, 3});
  const at::Tensor expected = ref_furthest_point_sample(xyz, 120, 9);
  for (const CpuFpsPath path :
       {CpuFpsPath::kAuto, CpuFpsPath::kPlain, CpuFpsPath::kSpatial, CpuFpsPath::kSplit}) {
    EXPECT_TRUE(at::equal(fps_on(path, xyz, 120, 9), expected)) << static_cast<int>(path);
  }
}

TEST(FurthestPointSample, HandWorkedLine) {
  // x = 0, 1, 2, 3, 10: from 0 the furthest is 10 (index 4), then 3 is 9
  // away from {0, 10}, then 1 and 2 are both 1 away from the set: the tie goes
  // to index 1.
  const at::Tensor xyz =
      at::tensor({0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 2.f, 0.f, 0.f, 3.f, 0.f, 0.f, 10.f, 0.f, 0.f})
          .view({1, 5, 3});
  EXPECT_TRUE(at::equal(furthest_point_sample(xyz, 5), longs({0, 4, 3, 1, 2}).view({1, 5})));
  // Starting elsewhere.
  EXPECT_TRUE(at::equal(furthest_point_sample(xyz, 3, 4), longs({4, 0, 3}).view({1, 3})));
}

TEST(FurthestPointSample, DoesNotSkipPointsAtTheOrigin) {
  // The popular CUDA extension skips points with |p|^2 <= 1e-3; we do not.
  const at::Tensor xyz = at::tensor({0.f, 0.f, 0.f, 1.f, 1.f, 1.f, 1.1f, 1.f, 1.f}).view({1, 3, 3});
  EXPECT_TRUE(at::equal(furthest_point_sample(xyz, 3, 1), longs({1, 0, 2}).view({1, 3})));
  // All at the origin: every index once, lowest unsampled first.
  const at::Tensor zeros = at::zeros({2, 6, 3});
  EXPECT_TRUE(at::equal(furthest_point_sample(zeros, 6, 2),
                        longs({2, 0, 1, 3, 4, 5, 2, 0, 1, 3, 4, 5}).view({2, 6})));
}

TEST(FurthestPointSample, DuplicatesNeverRepeatAnIndex) {
  // Four distinct places, each repeated five times: the first four picks are
  // one per place, then distance 0 everywhere: lowest unsampled indices.
  at::manual_seed(5);
  const at::Tensor places = at::rand({2, 4, 3});
  const at::Tensor xyz = places.repeat({1, 5, 1});  // (2, 20, 3), index i is place i % 4
  const at::Tensor got = furthest_point_sample(xyz, 20);
  EXPECT_TRUE(at::equal(got, ref_furthest_point_sample(xyz, 20, 0)));
  expect_distinct_rows(got);
  const at::Tensor first_four = std::get<0>(got.slice(1, 0, 4).remainder(4).sort(1));
  EXPECT_TRUE(at::equal(first_four, longs({0, 1, 2, 3, 0, 1, 2, 3}).view({2, 4})));
}

TEST(FurthestPointSample, NpointEqualsNIsAPermutation) {
  at::manual_seed(6);
  const at::Tensor xyz = at::randn({2, 64, 3});
  const at::Tensor got = furthest_point_sample(xyz, 64, 10);
  EXPECT_TRUE(at::equal(got, ref_furthest_point_sample(xyz, 64, 10)));
  EXPECT_TRUE(at::equal(std::get<0>(got.sort(1)), at::arange(64).repeat({2, 1})));
}

TEST(FurthestPointSample, LowPrecisionAndStridedInputsAreConvertedToFloat32) {
  at::manual_seed(7);
  for (auto dtype : {at::kHalf, at::kBFloat16, at::kDouble}) {
    const at::Tensor xyz = at::randn({2, 50, 3}).to(dtype);
    EXPECT_TRUE(at::equal(furthest_point_sample(xyz, 20), ref_furthest_point_sample(xyz, 20, 0)))
        << dtype;
  }
  const at::Tensor strided = at::randn({2, 3, 50}).transpose(1, 2);  // (2, 50, 3), not contiguous
  ASSERT_FALSE(strided.is_contiguous());
  EXPECT_TRUE(at::equal(furthest_point_sample(strided, 20),
                        ref_furthest_point_sample(strided.contiguous(), 20, 0)));
}

void expect_fps_rejected(const at::Tensor& xyz, int64_t npoint, int64_t start,
                         const std::string& fragment) {
  try {
    furthest_point_sample(xyz, npoint, start);
    FAIL() << "accepted; expected: " << fragment;
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(FurthestPointSample, BadInputsNameTheArgument) {
  expect_fps_rejected(at::rand({2, 5}), 2, 0, "xyz must have shape (B, N, 3), got shape [2, 5]");
  expect_fps_rejected(at::rand({2, 5, 2}), 2, 0, "xyz must have shape (B, N, 3)");
  expect_fps_rejected(at::zeros({2, 5, 3}, at::kLong), 2, 0,
                      "xyz must be float32, float64, float16 or bfloat16, got Long");
  expect_fps_rejected(at::rand({2, 5, 3}), 6, 0, "npoint must be in [1, N] = [1, 5], got 6");
  expect_fps_rejected(at::rand({2, 5, 3}), 0, 0, "npoint must be in [1, N] = [1, 5], got 0");
  expect_fps_rejected(at::rand({2, 5, 3}), 2, 5, "start must be in [0, N) = [0, 5), got 5");
  expect_fps_rejected(at::rand({2, 0, 3}), 1, 0, "xyz must hold at least one point");
  expect_fps_rejected(at::rand({2, 5, 3}).to_sparse(), 2, 0,
                      "furthest_point_sample: xyz must be a strided (dense) tensor, got Sparse");
}

TEST(FurthestPointSample, EmptyBatchGivesAnEmptyResult) {
  const at::Tensor got = furthest_point_sample(at::rand({0, 5, 3}), 3, 1);
  EXPECT_EQ(got.sizes(), (at::IntArrayRef{0, 3}));
  EXPECT_EQ(got.scalar_type(), at::kLong);
}

}  // namespace
