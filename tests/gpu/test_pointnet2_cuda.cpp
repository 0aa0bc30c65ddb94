// The PointNet++ ops on CUDA against the CPU kernels: indices exactly, features
// within tolerance (float32, float16, bfloat16), backward in both scatter
// modes, and the deterministic mode repeating bitwise. Skips, saying why,
// where no CUDA device is visible.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "dtrain/config.h"
#include "dtrain/kernels/pointnet2.h"
#include "expect_error.h"
#include "test_pointnet2_reference.h"

namespace {

namespace k = dtrain::kernels;

bool cuda_ready() {
  return DTRAIN_WITH_CUDA && at::hasCUDA();
}

#define SKIP_WITHOUT_CUDA()                                                         \
  do {                                                                              \
    if (!DTRAIN_WITH_CUDA) {                                                        \
      GTEST_SKIP() << "dtrain was built without CUDA (DTRAIN_CUDA=OFF or no nvcc)"; \
    }                                                                               \
    if (!at::hasCUDA()) {                                                           \
      GTEST_SKIP() << "no CUDA device visible";                                     \
    }                                                                               \
  } while (false)

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

// One cloud of `points` points on a 16 x 16 x ... grid, filled layer by
// layer (equal distances everywhere: ties on every path).
at::Tensor grid_cloud(int64_t points) {
  const at::Tensor cells = at::arange(points, at::kInt);
  return at::stack({cells % 16, cells.div(16, "floor") % 16, cells.div(256, "floor")}, 1)
      .to(at::kFloat)
      .unsqueeze(0);
}

// An FPS case: clouds, picks and start, and a name for failures.
struct FpsCase {
  std::string name;
  at::Tensor xyz;
  int64_t npoint;
  int64_t start;
};

// Forces an FPS kernel (and the striped kernel's picks per round and blocks
// per cloud, the register kernel's furthest point of a thread, the leader
// kernel's threads a block) for the lifetime of the object.
class ForcedFps {
 public:
  ForcedFps(const char* path, const char* round, const char* cluster = "", const char* lane = "",
            const char* threads = "") {
    setenv("DTRAIN_CUDA_FPS", path, 1);
    setenv("DTRAIN_CUDA_FPS_ROUND", round, 1);
    setenv("DTRAIN_CUDA_FPS_CLUSTER", cluster, 1);
    setenv("DTRAIN_CUDA_FPS_LANE", lane, 1);
    setenv("DTRAIN_CUDA_FPS_THREADS", threads, 1);
  }
  ~ForcedFps() {
    unsetenv("DTRAIN_CUDA_FPS");
    unsetenv("DTRAIN_CUDA_FPS_ROUND");
    unsetenv("DTRAIN_CUDA_FPS_CLUSTER");
    unsetenv("DTRAIN_CUDA_FPS_LANE");
    unsetenv("DTRAIN_CUDA_FPS_THREADS");
  }
  ForcedFps(const ForcedFps&) = delete;
  ForcedFps& operator=(const ForcedFps&) = delete;
};

// The spatial kernels on a setting: the default (the register kernel up to
// 8192 points), the register kernel finding a thread's furthest point by a
// tree, and taking rounds of two or four picks (which take the tree), the
// leader kernel on 1024 and 512 threads and in rounds of two (512 threads)
// and four (its block by default, 512), the chunk kernel, and the striped
// kernel with 1, 2 and 4 picks per round.
struct FpsSetting {
  const char* path;
  const char* round;
  const char* lane = "";
  const char* threads = "";
};
constexpr FpsSetting kSpatialSettings[] = {{"auto", ""},
                                           {"registers", "", "tree"},
                                           {"registers", "2", ""},
                                           {"registers", "4", "tree"},
                                           {"leader", "", "", "1024"},
                                           {"leader", "", "", "512"},
                                           {"leader", "2", "", "512"},
                                           {"leader", "4"},
                                           {"chunks", ""},
                                           {"striped", "1"},
                                           {"striped", "2"},
                                           {"striped", "4"}};

// The settings of the kernels that keep a thread's points in registers.
bool in_registers(const FpsSetting& setting) {
  const std::string path = setting.path;
  return path == "registers" || path == "leader";
}

std::string describe(const FpsSetting& setting) {
  return std::string(" (") + setting.path + (*setting.round ? std::string(" round ") : "") +
         setting.round + (*setting.lane ? std::string(" lane ") : "") + setting.lane +
         (*setting.threads ? std::string(" threads ") : "") + setting.threads + ")";
}

// Forces a setting for the lifetime of the object.
class ForcedSetting : public ForcedFps {
 public:
  explicit ForcedSetting(const FpsSetting& setting)
      : ForcedFps(setting.path, setting.round, "", setting.lane, setting.threads) {}
};

// Every FPS path agrees with the CPU: the register kernel (Morton order and
// warps skipped by their bounding box), the striped kernel (chunks of 32
// skipped by their box, several picks per round), and the chunk kernel
// (sorted by cell, chunks skipped by their bounding box) on random clouds,
// clouds of ties and duplicates, clumps, and clouds whose warps hold only
// padding; and the one-block kernels forced with DTRAIN_CUDA_FPS.
TEST(PointNet2Cuda, FurthestPointSampleEveryPathAgrees) {
  SKIP_WITHOUT_CUDA();
  at::manual_seed(34);
  for (int64_t batch : {2, 32, 200}) {
    for (int64_t n : {1000, 2000, 8192}) {  // 2, 4 and 16 points a thread
      const at::Tensor xyz = at::rand({batch, n, 3});
      const at::Tensor expected = k::furthest_point_sample(xyz, 512, 7);
      const std::string what = "batch " + std::to_string(batch) + ", n " + std::to_string(n);
      expect_same(k::furthest_point_sample(cuda(xyz), 512, 7), expected, what);
      {
        const ForcedFps striped("striped", "4");
        expect_same(k::furthest_point_sample(cuda(xyz), 512, 7), expected, what + " (striped)");
      }
      // The register kernel's lanes and rounds, and the leader kernel.
      for (const FpsSetting& setting : kSpatialSettings) {
        if (in_registers(setting)) {
          const ForcedSetting forced(setting);
          expect_same(k::furthest_point_sample(cuda(xyz), 512, 7), expected,
                      what + describe(setting));
        }
      }
    }
  }
  // A 16^3 grid cut to 4096 points (equal distances everywhere), sampled to
  // the last point; 8 distinct points repeated; 8 tight far-apart clumps; a
  // cloud of 33 points (most warps padding only); Gaussian points, whose
  // picks are far apart (many picks per round). Each on every spatial kernel.
  const at::Tensor grid = grid_cloud(4096);
  const at::Tensor repeated = at::rand({2, 8, 3}).repeat({1, 1000, 1});
  auto clumps_of = [](int64_t batch, int64_t n) {
    return (at::rand({batch, n, 3}) * 0.01 +
            at::arange(n).div(n / 8, "floor").to(at::kFloat).view({1, -1, 1}) * 3)
        .contiguous();
  };
  const at::Tensor clumps = clumps_of(3, 8192);
  const at::Tensor small = at::rand({5, 33, 3});
  const at::Tensor tiny = at::rand({3, 5, 3});
  const at::Tensor gaussian = at::randn({4, 8192, 3});
  // NaN and infinite coordinates: a NaN point's distance never falls, so
  // the CPU takes those points first, in index order; every path must too.
  const at::Tensor non_finite = at::rand({2, 3000, 3})
                                    .index_put_({0, 7, 1}, NAN)
                                    .index_put_({0, 2999, 0}, INFINITY)
                                    .index_put_({1, 100, 2}, -INFINITY)
                                    .index_put_({1, 5, 0}, NAN);
  const at::Tensor expected_grid = k::furthest_point_sample(grid, 4096, 5);
  const at::Tensor expected_repeated = k::furthest_point_sample(repeated, 8000);
  const at::Tensor expected_clumps = k::furthest_point_sample(clumps, 2048);
  const at::Tensor expected_small = k::furthest_point_sample(small, 33, 32);
  const at::Tensor expected_gaussian = k::furthest_point_sample(gaussian, 8192, 3);
  const at::Tensor expected_tiny = k::furthest_point_sample(tiny, 5, 4);
  const at::Tensor expected_one = k::furthest_point_sample(small, 1, 20);
  const at::Tensor expected_non_finite = k::furthest_point_sample(non_finite, 600, 1);
  for (const FpsSetting& setting : kSpatialSettings) {
    const ForcedSetting forced(setting);
    const std::string on = describe(setting);
    expect_same(k::furthest_point_sample(cuda(grid), 4096, 5), expected_grid, "grid" + on);
    expect_same(k::furthest_point_sample(cuda(repeated), 8000), expected_repeated,
                "8 points repeated" + on);
    expect_same(k::furthest_point_sample(cuda(clumps), 2048), expected_clumps, "clumps" + on);
    expect_same(k::furthest_point_sample(cuda(small), 33, 32), expected_small, "33 points" + on);
    expect_same(k::furthest_point_sample(cuda(gaussian), 8192, 3), expected_gaussian,
                "Gaussian, every point" + on);
    expect_same(k::furthest_point_sample(cuda(tiny), 5, 4), expected_tiny, "5 points" + on);
    expect_same(k::furthest_point_sample(cuda(small), 1, 20), expected_one, "one pick" + on);
    expect_same(k::furthest_point_sample(cuda(non_finite), 600, 1), expected_non_finite,
                "NaN and infinite coordinates" + on);
  }
  // Beyond 8192 points the default is the striped kernel on a cluster (sm_90
  // on) or the chunk kernel.
  const at::Tensor big_clumps = clumps_of(2, 40000);
  expect_same(k::furthest_point_sample(cuda(big_clumps), 3000, 123),
              k::furthest_point_sample(big_clumps, 3000, 123), "40000 points in clumps");
  const at::Tensor xyz = at::rand({3, 4096, 3});
  const at::Tensor expected = k::furthest_point_sample(xyz, 300);
  for (const char* path : {"registers", "leader", "striped", "chunks", "shared", "global"}) {
    const ForcedFps forced(path, "");
    expect_same(k::furthest_point_sample(cuda(xyz), 300), expected, path);
  }
  for (const char* path : {"registers", "leader"}) {
    const ForcedFps forced(path, "");
    EXPECT_THROW(k::furthest_point_sample(cuda(at::rand({1, 9000, 3})), 10), std::exception);
  }
  {
    const ForcedFps forced("leader", "2", "", "", "1024");
    dtrain::testing::expect_error<std::exception>(
        [&] { k::furthest_point_sample(cuda(xyz), 10); },
        "DTRAIN_CUDA_FPS_THREADS=1024: the leader kernel takes rounds of 2 picks "
        "(DTRAIN_CUDA_FPS_ROUND) on 512 threads only");
  }
  {
    const ForcedFps forced("leader", "", "", "", "256");
    dtrain::testing::expect_error<std::exception>(
        [&] { k::furthest_point_sample(cuda(xyz), 10); },
        "DTRAIN_CUDA_FPS_THREADS must be auto, 512 or 1024, got '256'");
  }
  {
    // One block takes 8192 points; from sm_90 on a cluster of 8 takes 65536.
    const ForcedFps forced("striped", "");
    EXPECT_THROW(k::furthest_point_sample(cuda(at::rand({1, 65537, 3})), 10), std::exception);
  }
  {
    const ForcedFps forced("fastest", "");
    EXPECT_THROW(k::furthest_point_sample(cuda(xyz), 10), std::exception);
  }
  {
    const ForcedFps forced("striped", "3");
    EXPECT_THROW(k::furthest_point_sample(cuda(xyz), 10), std::exception);
  }
  for (const char* path : {"registers", "striped"}) {  // checked whichever kernel runs
    const ForcedFps forced(path, "", "", "scan");
    dtrain::testing::expect_error<std::exception>(
        [&] { k::furthest_point_sample(cuda(xyz), 10); },
        "DTRAIN_CUDA_FPS_LANE must be auto, pass or tree, got 'scan'");
  }
  {
    const ForcedFps forced("registers", "2", "", "pass");
    dtrain::testing::expect_error<std::exception>(
        [&] { k::furthest_point_sample(cuda(xyz), 10); },
        "DTRAIN_CUDA_FPS_LANE=pass: rounds of 2 picks (DTRAIN_CUDA_FPS_ROUND) need the lane "
        "tree");
  }
}

// Beyond 8192 points the striped kernel runs a cluster of 2, 4 or 8 blocks
// per cloud (sm_90 and later): clouds whose shares are uneven, clumps that
// straddle blocks, a grid of ties, the start in the last block, every round
// size.
// Whether the striped kernel takes more than one block's 8192 points here
// (its limit on GPUs before sm_90, which have no clusters).
bool striped_takes_clusters() {
  const ForcedFps forced("striped", "");
  try {
    k::furthest_point_sample(cuda(at::rand({1, 8193, 3})), 2);
    return true;
  } catch (const std::exception& e) {
    if (std::string(e.what()).find("at most 8192 points") == std::string::npos) {
      throw;
    }
    return false;
  }
}

TEST(PointNet2Cuda, FurthestPointSampleOnAClusterAgrees) {
  SKIP_WITHOUT_CUDA();
  if (!striped_takes_clusters()) {
    GTEST_SKIP() << "thread-block clusters need sm_90";
  }
  at::manual_seed(35);
  const std::vector<FpsCase> cases = {
      {"9000 uniform (2 blocks)", at::rand({3, 9000, 3}), 2000, 8999},
      {"20000 Gaussian (4 blocks)", at::randn({2, 20000, 3}), 3000, 4},
      {"16^3 x 4 grid (2 blocks)", grid_cloud(16384), 4096, 1},
      {"40000 in 8 clumps (8 blocks)",
       (at::rand({2, 40000, 3}) * 0.01 +
        at::arange(40000).div(5000, "floor").to(at::kFloat).view({1, -1, 1}) * 3)
           .contiguous(),
       2500, 39999},
      {"65536 uniform (8 blocks)", at::rand({1, 65536, 3}), 1024, 0},
      {"9000 sampled to the last point (2 blocks)", at::rand({1, 9000, 3}), 9000, 4500},
      {"12000 with NaN and infinity (2 blocks)",
       at::rand({1, 12000, 3})
           .index_put_({0, 11000, 0}, NAN)
           .index_put_({0, 3, 2}, INFINITY)
           .index_put_({0, 8192, 1}, NAN),
       500, 0},
  };
  for (const FpsCase& c : cases) {
    const at::Tensor expected = k::furthest_point_sample(c.xyz, c.npoint, c.start);
    for (const char* round : {"1", "2", "4"}) {
      const ForcedFps forced("striped", round);
      expect_same(k::furthest_point_sample(cuda(c.xyz), c.npoint, c.start), expected,
                  c.name + " (round " + round + ")");
    }
  }
}

// A cloud the striped kernel could hold in fewer blocks, spread over a
// cluster of 2, 4 or 8 on request (DTRAIN_CUDA_FPS_CLUSTER), so that a small
// batch keeps more SMs busy: the goal size (32 clouds of 8192 points), a
// cloud sampled to its last point, a grid of ties, NaN, and 10 points on 8
// blocks (blocks holding no points at all).
TEST(PointNet2Cuda, FurthestPointSampleOnARequestedClusterAgrees) {
  SKIP_WITHOUT_CUDA();
  if (!striped_takes_clusters()) {
    GTEST_SKIP() << "thread-block clusters need sm_90";
  }
  at::manual_seed(36);
  const std::vector<FpsCase> cases = {
      {"32 x 8192 uniform", at::rand({32, 8192, 3}), 1024, 0},
      {"3 x 1000 Gaussian, every point", at::randn({3, 1000, 3}), 1000, 999},
      {"16^3 grid", grid_cloud(4096), 2048, 5},
      {"3000 with NaN and infinity",
       at::rand({1, 3000, 3}).index_put_({0, 2000, 0}, NAN).index_put_({0, 3, 2}, INFINITY), 300,
       1},
      {"10 points", at::rand({2, 10, 3}), 10, 9},
  };
  for (const FpsCase& c : cases) {
    const at::Tensor expected = k::furthest_point_sample(c.xyz, c.npoint, c.start);
    for (const char* cluster : {"1", "2", "4", "8"}) {
      for (const char* round : {"1", "2", "4"}) {
        const ForcedFps forced("striped", round, cluster);
        expect_same(k::furthest_point_sample(cuda(c.xyz), c.npoint, c.start), expected,
                    c.name + " (cluster " + cluster + ", round " + round + ")");
      }
    }
  }
  auto expect_refusal = [](const char* cluster, int64_t n, const std::string& words) {
    const ForcedFps forced("striped", "", cluster);
    dtrain::testing::expect_error<std::exception>(
        [&] {
          k::furthest_point_sample(cuda(at::rand({1, n, 3})), 10);
        },
        words);
  };
  expect_refusal("1", 9000, "hold at most 8192 points, got 9000");  // 9000 need 2 blocks
  expect_refusal("3", 100, "DTRAIN_CUDA_FPS_CLUSTER must be auto, 1, 2, 4 or 8, got '3'");
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
