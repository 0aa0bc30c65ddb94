// ball_query, knn and three_nn on CPU against the brute-force references
// (exact index equality), on random and adversarial inputs, and their checks.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "dtrain/kernels/pointnet2.h"
#include "expect_error.h"
#include "test_pointnet2_reference.h"

namespace {

namespace k = dtrain::kernels;
using dtrain::test::equal_with_nan;
using dtrain::test::ref_ball_query;
using dtrain::test::ref_knn;
using dtrain::testing::expect_error;

void expect_ball_query_matches(const at::Tensor& q, const at::Tensor& x, double radius,
                               int64_t nsample) {
  const auto got = k::ball_query(q, x, radius, nsample);
  const auto [idx, count] = ref_ball_query(q, x, radius, nsample);
  EXPECT_EQ(got.idx.sizes(), idx.sizes());
  EXPECT_EQ(got.idx.scalar_type(), at::kLong);
  EXPECT_TRUE(at::equal(got.idx, idx)) << "radius " << radius << " nsample " << nsample;
  EXPECT_TRUE(at::equal(got.count, count)) << "radius " << radius << " nsample " << nsample;
}

TEST(BallQuery, MatchesReferenceOnRandomClouds) {
  at::manual_seed(11);
  const at::Tensor x = at::rand({2, 300, 3});
  const at::Tensor q = at::rand({2, 40, 3});
  for (double radius : {0.05, 0.2, 0.5, 2.0}) {
    for (int64_t nsample : {1, 8, 32}) {
      expect_ball_query_matches(q, x, radius, nsample);
    }
  }
}

TEST(BallQuery, PaddingAndEmptyBalls) {
  // Points at x = 0, 1, 2, 3; centres at 0.1 (hits 0), 1.5 (hits 1, 2) and 100 (none).
  const at::Tensor x =
      at::tensor({0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 2.f, 0.f, 0.f, 3.f, 0.f, 0.f}).view({1, 4, 3});
  const at::Tensor q =
      at::tensor({0.1f, 0.f, 0.f, 1.5f, 0.f, 0.f, 100.f, 0.f, 0.f}).view({1, 3, 3});
  const auto got = k::ball_query(q, x, 0.6, 4);
  EXPECT_TRUE(at::equal(
      got.idx, at::tensor({0, 0, 0, 0, 1, 2, 1, 1, 0, 0, 0, 0}, at::kLong).view({1, 3, 4})));
  EXPECT_TRUE(at::equal(got.count, at::tensor({1, 2, 0}, at::kLong).view({1, 3})));
  // The boundary is exclusive: distance exactly equal to the radius is out.
  const auto boundary = k::ball_query(at::zeros({1, 1, 3}), x, 1.0, 2);
  EXPECT_EQ(boundary.count.item<int64_t>(), 1);
}

TEST(BallQuery, AdversarialClouds) {
  at::manual_seed(12);
  // Duplicates and the origin: every query hits the same stack of points.
  const at::Tensor stack = at::zeros({2, 50, 3});
  expect_ball_query_matches(at::zeros({2, 5, 3}), stack, 0.1, 16);
  expect_ball_query_matches(at::rand({2, 5, 3}) * 0.01, stack, 0.1, 64);  // more slots than points
  // A single point, hit or missed.
  const at::Tensor one = at::rand({3, 1, 3});
  expect_ball_query_matches(one, one, 0.01, 4);
  expect_ball_query_matches(one + 10, one, 0.01, 4);
  // Low precision and strided inputs.
  const at::Tensor x = at::rand({2, 3, 100}).transpose(1, 2);
  expect_ball_query_matches(x.slice(1, 0, 20).to(at::kHalf), x.to(at::kBFloat16), 0.3, 16);
}

void expect_knn_matches(const at::Tensor& q, const at::Tensor& x, int64_t kk,
                        const std::string& what = "") {
  const auto got = k::knn(q, x, kk);
  const auto [idx, dist] = ref_knn(q, x, kk);
  EXPECT_TRUE(at::equal(got.idx, idx)) << what << " k " << kk;
  EXPECT_EQ(got.dist2.scalar_type(), at::kFloat);
  EXPECT_TRUE(equal_with_nan(got.dist2, dist)) << what << " k " << kk;
}

TEST(Knn, MatchesReferenceOnRandomAndAdversarialClouds) {
  at::manual_seed(13);
  const at::Tensor x = at::randn({2, 200, 3});
  for (int64_t kk : {1, 3, 16, 200}) {
    expect_knn_matches(at::randn({2, 30, 3}), x, kk);
  }
  // Ties everywhere: a grid of integer points queried from grid points.
  const at::Tensor grid =
      at::stack(at::meshgrid({at::arange(4), at::arange(4), at::arange(2)}, "ij"), -1)
          .reshape({1, 32, 3})
          .to(at::kFloat);
  expect_knn_matches(grid, grid, 7);
  // Many 64-point blocks, where a full list only admits closer points: a
  // larger random cloud, and the grid repeated ten times so every distance
  // ties with copies in later blocks (the lowest index must win).
  expect_knn_matches(at::randn({2, 50, 3}), at::randn({2, 1000, 3}), 16);
  const at::Tensor copies = grid.repeat({1, 10, 1});
  for (int64_t kk : {7, 40}) {
    expect_knn_matches(grid, copies, kk);
  }
  expect_knn_matches(at::zeros({1, 3, 3}), at::zeros({1, 10, 3}), 10);  // all at the origin
  expect_knn_matches(at::rand({1, 4, 3}), at::rand({1, 1, 3}), 1);      // a single point
}

// kNN and three-NN through the grid (Note [Nearest points through a grid])
// on clouds large enough to build one: against the reference, and against
// the scan (DTRAIN_CPU_NEAREST=scan) on clouds that stress the grid: integer
// lattices (ties everywhere) queried on and between lattice points, repeated
// points, a plane and a line (flat grids), clumps, queries far outside, far
// from the origin (the margins), and a cloud with a NaN (scanned instead).
TEST(Knn, GridMatchesReferenceAndScan) {
  at::manual_seed(14);
  const at::Tensor cloud = at::rand({2, 2000, 3});
  for (int64_t kk : {1, 3, 16, 100}) {
    expect_knn_matches(at::rand({2, 60, 3}) * 1.4 - 0.2, cloud, kk);
  }
  const at::Tensor unknown = at::rand({2, 80, 3});
  const auto three = k::three_nn(unknown, cloud);
  const auto [three_idx, three_dist] = ref_knn(unknown, cloud, 3);
  EXPECT_TRUE(at::equal(three.idx, three_idx));
  EXPECT_TRUE(at::equal(three.dist2, three_dist));

  auto scan = [](const at::Tensor& q, const at::Tensor& x, int64_t kk) {
    setenv("DTRAIN_CPU_NEAREST", "scan", 1);
    auto result = k::knn(q, x, kk);
    unsetenv("DTRAIN_CPU_NEAREST");
    return result;
  };
  const at::Tensor lattice =
      at::stack(at::meshgrid({at::arange(16), at::arange(16), at::arange(16)}, "ij"), -1)
          .reshape({1, 4096, 3})
          .to(at::kFloat);
  const at::Tensor between = lattice.slice(1, 0, 300) + 0.5;
  const at::Tensor plane = at::cat({at::rand({1, 3000, 2}), at::zeros({1, 3000, 1})}, 2);
  const at::Tensor line = at::cat({at::rand({1, 3000, 1}), at::zeros({1, 3000, 2})}, 2);
  const at::Tensor clumps = (at::rand({1, 4000, 3}) * 0.01 +
                             at::arange(4000).div(500, "floor").to(at::kFloat).view({1, -1, 1}))
                                .contiguous();
  at::Tensor with_nan = at::rand({1, 3000, 3});
  with_nan.index_put_({0, 5, 2}, NAN);
  struct Case {
    const char* name;
    at::Tensor queries;
    at::Tensor points;
  };
  const std::vector<Case> cases = {
      {"lattice on points", lattice.slice(1, 0, 300), lattice},
      {"lattice between points", between, lattice},
      {"repeated points", at::rand({1, 100, 3}), at::rand({1, 8, 3}).repeat({1, 500, 1})},
      {"plane", at::rand({1, 100, 3}), plane},
      {"line", at::rand({1, 100, 3}), line},
      {"clumps", at::rand({1, 100, 3}) * 8, clumps},
      {"far outside", at::randn({1, 50, 3}) * 100, at::rand({1, 3000, 3})},
      {"far from the origin", at::rand({1, 100, 3}) + 1e4, at::rand({1, 3000, 3}) + 1e4},
      {"a NaN among the points", at::rand({1, 50, 3}), with_nan},
  };
  for (const Case& c : cases) {
    for (int64_t kk : {1, 3, 20}) {
      const auto grid = k::knn(c.queries, c.points, kk);
      const auto scanned = scan(c.queries, c.points, kk);
      EXPECT_TRUE(at::equal(grid.idx, scanned.idx)) << c.name << " k " << kk;
      EXPECT_TRUE(at::equal(at::nan_to_num(grid.dist2, -1.0), at::nan_to_num(scanned.dist2, -1.0)))
          << c.name << " k " << kk;
    }
  }
}

TEST(Knn, HandWorkedTies) {
  // Points at x = 1, -1, 2, 0 from the origin: distances 1, 1, 4, 0.
  const at::Tensor x =
      at::tensor({1.f, 0.f, 0.f, -1.f, 0.f, 0.f, 2.f, 0.f, 0.f, 0.f, 0.f, 0.f}).view({1, 4, 3});
  const auto got = k::knn(at::zeros({1, 1, 3}), x, 3);
  EXPECT_TRUE(at::equal(got.idx, at::tensor({3, 0, 1}, at::kLong).view({1, 1, 3})));
  EXPECT_TRUE(at::equal(got.dist2, at::tensor({0.f, 1.f, 1.f}).view({1, 1, 3})));
}

// Every row ascending when NaN is read as +inf (the documented order).
void expect_rows_ascending(const at::Tensor& dist2, const std::string& what) {
  const at::Tensor rank = at::where(at::isnan(dist2), INFINITY, dist2);
  const int64_t last = rank.size(2) - 1;
  EXPECT_TRUE(at::all(rank.slice(2, 1) >= rank.slice(2, 0, last)).item<bool>()) << what;
}

// Note [NaN distances rank as +inf]: a NaN squared distance comes after
// every finite one, tied with +inf by index; against the brute-force
// reference with that rule, on the scan and (for the large cloud) with the
// grid allowed, which must scan a non-finite cloud.
TEST(Knn, NaNDistancesRankAsInfinity) {
  // Hand-worked: points NaN, x = 1, x = 2 from the origin.
  const at::Tensor line = at::tensor({NAN, 0.f, 0.f, 1.f, 0.f, 0.f, 2.f, 0.f, 0.f}).view({1, 3, 3});
  const auto two = k::knn(at::zeros({1, 1, 3}), line, 2);
  EXPECT_TRUE(at::equal(two.idx, at::tensor({1, 2}, at::kLong).view({1, 1, 2})));
  EXPECT_TRUE(at::equal(two.dist2, at::tensor({1.f, 4.f}).view({1, 1, 2})));
  const auto three = k::knn(at::zeros({1, 1, 3}), line, 3);  // fewer than k finite: NaN last
  EXPECT_TRUE(at::equal(three.idx, at::tensor({1, 2, 0}, at::kLong).view({1, 1, 3})));
  EXPECT_TRUE(std::isnan(three.dist2[0][0][2].item<float>()));

  at::manual_seed(15);
  // NaN points scattered through a cloud, the first point among them.
  at::Tensor scattered = at::randn({2, 300, 3});
  for (int64_t j : {0, 1, 17, 64, 150, 299}) {
    scattered.index_put_({0, j, j % 3}, NAN);
  }
  scattered.index_put_({1, 5, 0}, NAN);
  // The first 100 points NaN: the list fills with NaN entries in the first
  // block, and a full list must still admit every finite point after it.
  at::Tensor nan_first = at::rand({1, 300, 3});
  nan_first.slice(1, 0, 100).fill_(NAN);
  // NaN and +inf distances (coordinates whose square overflows) tie, by index.
  at::Tensor with_inf = at::rand({1, 80, 3});
  with_inf.index_put_({0, 3, 1}, 1e30f);
  with_inf.index_put_({0, 9, 0}, NAN);
  with_inf.index_put_({0, 12, 2}, -1e30f);
  with_inf.index_put_({0, 40, 1}, NAN);
  // Every point NaN; and a large cloud (grid-sized) with NaN points.
  const at::Tensor all_nan = at::full({1, 20, 3}, NAN);
  at::Tensor large = at::rand({1, 3000, 3});
  for (int64_t j : {0, 2, 999, 2999}) {
    large.index_put_({0, j, 1}, NAN);
  }
  const at::Tensor queries = at::randn({2, 30, 3});
  // NaN queries: every distance NaN, so indices 0..k-1.
  at::Tensor nan_queries = at::rand({2, 6, 3});
  nan_queries.index_put_({0, 2, 1}, NAN);
  nan_queries.index_put_({1, 0, 0}, NAN);
  struct Case {
    const char* name;
    at::Tensor queries;
    at::Tensor points;
  };
  const std::vector<Case> cases = {
      {"scattered NaN points", queries, scattered},
      {"first 100 points NaN", queries.slice(0, 0, 1), nan_first},
      {"NaN and +inf distances", queries.slice(0, 0, 1), with_inf},
      {"every point NaN", queries.slice(0, 0, 1), all_nan},
      {"NaN in a large cloud", queries.slice(0, 0, 1), large},
      {"NaN queries", nan_queries, at::rand({2, 50, 3})},
  };
  for (const Case& c : cases) {
    const int64_t n = c.points.size(1);
    for (int64_t kk : {int64_t{1}, int64_t{3}, int64_t{16}, n}) {
      if (kk > n) {
        continue;
      }
      for (const char* path : {"auto", "scan"}) {
        setenv("DTRAIN_CPU_NEAREST", path, 1);
        const std::string what = std::string(c.name) + " (" + path + ")";
        expect_knn_matches(c.queries, c.points, kk, what);
        expect_rows_ascending(k::knn(c.queries, c.points, kk).dist2, what);
        unsetenv("DTRAIN_CPU_NEAREST");
      }
    }
    const auto nn3 = k::three_nn(c.queries, c.points);
    const auto [idx3, dist3] = ref_knn(c.queries, c.points, 3);
    EXPECT_TRUE(at::equal(nn3.idx, idx3)) << c.name << " three_nn";
    EXPECT_TRUE(equal_with_nan(nn3.dist2, dist3)) << c.name << " three_nn";
  }
  // A NaN point is chosen only when fewer than k points are finite: with
  // 200 finite points after the 100 NaN ones, k <= 200 never returns one.
  const auto finite = k::knn(queries.slice(0, 0, 1), nan_first, 200);
  EXPECT_FALSE(at::any(at::isnan(finite.dist2)).item<bool>());
  EXPECT_TRUE(at::all(finite.idx >= 100).item<bool>());
}

TEST(ThreeNn, MatchesReference) {
  at::manual_seed(14);
  const at::Tensor known = at::rand({2, 64, 3});
  const at::Tensor unknown = at::rand({2, 100, 3});
  const auto got = k::three_nn(unknown, known);
  const auto [idx, dist] = ref_knn(unknown, known, 3);
  EXPECT_TRUE(at::equal(got.idx, idx));
  EXPECT_TRUE(at::equal(got.dist2, dist));
  // Exactly three known points, all duplicates: order 0, 1, 2.
  const auto dup = k::three_nn(at::rand({1, 5, 3}), at::ones({1, 3, 3}));
  EXPECT_TRUE(at::equal(dup.idx, at::tensor({0, 1, 2}, at::kLong).repeat({1, 5, 1})));
  // Unknown points on top of known ones: distance 0 first.
  const auto self = k::three_nn(known, known);
  EXPECT_TRUE(at::equal(self.idx.select(2, 0), at::arange(64).repeat({2, 1})));
  EXPECT_TRUE(at::equal(self.dist2.select(2, 0), at::zeros({2, 64})));
}

// An empty batch (B = 0), no queries (M = 0) or no points for the ball
// query (N = 0): empty results of the documented shapes.
TEST(Neighbours, EmptyBatchAndZeroSizesGiveEmptyResults) {
  for (int64_t batch : {0, 2}) {
    const at::Tensor x = at::rand({batch, 10, 3});
    for (int64_t m : {0, 4}) {
      if (batch > 0 && m > 0) {
        continue;  // not empty
      }
      const at::Tensor q = at::rand({batch, m, 3});
      const auto ball = k::ball_query(q, x, 0.5, 8);
      EXPECT_EQ(ball.idx.sizes(), (at::IntArrayRef{batch, m, 8}));
      EXPECT_EQ(ball.count.sizes(), (at::IntArrayRef{batch, m}));
      EXPECT_EQ(ball.idx.scalar_type(), at::kLong);
      const auto near = k::knn(q, x, 5);
      EXPECT_EQ(near.idx.sizes(), (at::IntArrayRef{batch, m, 5}));
      EXPECT_EQ(near.dist2.sizes(), (at::IntArrayRef{batch, m, 5}));
      EXPECT_EQ(near.dist2.scalar_type(), at::kFloat);
      const auto nn3 = k::three_nn(q, x);
      EXPECT_EQ(nn3.idx.sizes(), (at::IntArrayRef{batch, m, 3}));
      EXPECT_EQ(nn3.dist2.sizes(), (at::IntArrayRef{batch, m, 3}));
    }
  }
  // No points to find: every ball empty (count 0, indices 0).
  const auto none = k::ball_query(at::rand({2, 4, 3}), at::rand({2, 0, 3}), 0.5, 3);
  EXPECT_TRUE(at::equal(none.count, at::zeros({2, 4}, at::kLong)));
  EXPECT_TRUE(at::equal(none.idx, at::zeros({2, 4, 3}, at::kLong)));
}

// radius^2 is compared in float32: a radius whose square underflows to 0
// would find nothing, not even the centre, and one whose square overflows
// would take every point; both are refused, naming the value. A tiny
// radius whose square is still positive (subnormal) finds the centre.
TEST(BallQuery, RadiusWhoseFloat32SquareIsNotPositiveAndFiniteIsRefused) {
  const at::Tensor x = at::rand({1, 10, 3});
  expect_error<c10::Error>(
      [&] { k::ball_query(x, x, 1e-30, 4); },
      "ball_query: radius 1e-30 squared in float32 is 0; expected a positive, finite "
      "float32 square");
  expect_error<c10::Error>([&] { k::ball_query(x, x, 1e20, 4); },
                           "ball_query: radius 1e+20 squared in float32 is inf");
  const auto tiny = k::ball_query(x, x, 1e-20, 4);
  EXPECT_TRUE(at::all(tiny.count >= 1).item<bool>());
  EXPECT_TRUE(at::equal(tiny.idx.select(2, 0), at::arange(10).view({1, 10})));
}

TEST(Neighbours, BadInputsNameTheArgument) {
  const at::Tensor x = at::rand({2, 10, 3});
  const at::Tensor q = at::rand({2, 4, 3});
  expect_error<c10::Error>([&] { k::ball_query(q, x, 0.0, 4); },
                           "ball_query: radius must be a finite value > 0, got 0");
  expect_error<c10::Error>([&] { k::ball_query(q, x, -1.0, 4); },
                           "radius must be a finite value > 0, got -1");
  expect_error<c10::Error>([&] { k::ball_query(q, x, 0.1, 0); },
                           "ball_query: nsample must be >= 1, got 0");
  expect_error<c10::Error>(
      [&] {
        k::ball_query(q.view({8, 3}), x, 0.1, 4);
      },
      "ball_query: new_xyz must have shape (B, N, 3), got shape [8, 3]");
  expect_error<c10::Error>(
      [&] {
        k::ball_query(at::rand({3, 4, 3}), x, 0.1, 4);
      },
      "new_xyz has batch size 3");
  setenv("DTRAIN_CPU_NEAREST", "fastest", 1);
  try {
    k::knn(q, x, 2);
    ADD_FAILURE() << "an unknown DTRAIN_CPU_NEAREST was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("DTRAIN_CPU_NEAREST must be auto or scan, got 'fastest'"),
              std::string::npos)
        << e.what();
  }
  unsetenv("DTRAIN_CPU_NEAREST");
  expect_error<c10::Error>([&] { k::knn(q, x, 11); }, "knn: k must be in [1, N] = [1, 10]");
  expect_error<c10::Error>([&] { k::knn(q, x, 0); }, "got 0");
  expect_error<c10::Error>([&] { k::knn(q, x.to(at::kInt), 2); },
                           "knn: xyz must be float32, float64, float16 or bfloat16, got Int");
  expect_error<c10::Error>([&] { k::three_nn(q, x.slice(1, 0, 2)); },
                           "three_nn: known must hold at least 3 points, got shape [2, 2, 3]");
  expect_error<c10::Error>(
      [&] {
        k::three_nn(q, at::rand({2, 10, 4}));
      },
      "three_nn: known must have shape (B, N, 3)");
  // Sparse tensors: named, not LibTorch's "unsupported memory format".
  expect_error<c10::Error>([&] { k::knn(q, x.to_sparse(), 2); },
                           "knn: xyz must be a strided (dense) tensor, got Sparse");
  expect_error<c10::Error>([&] { k::ball_query(q.to_sparse(), x, 0.1, 4); },
                           "ball_query: new_xyz must be a strided (dense) tensor, got Sparse");
  expect_error<c10::Error>([&] { k::three_nn(q, x.to_sparse()); },
                           "three_nn: known must be a strided (dense) tensor, got Sparse");
}

}  // namespace
