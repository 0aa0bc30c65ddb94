// The clouds on which every CUDA FPS kernel, default or experimental, must
// give the CPU kernel's picks (test_pointnet2_cuda.cpp,
// test_fps_experimental_cuda.cpp), each with those picks computed once.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dtrain/kernels/pointnet2.h"

namespace dtrain::test {

// Clouds, picks and start, the CPU's picks, and a name for failures.
struct FpsCloud {
  std::string name;
  at::Tensor xyz;
  int64_t npoint;
  int64_t start;
  at::Tensor expected;
};

inline FpsCloud fps_cloud(std::string name, at::Tensor xyz, int64_t npoint, int64_t start) {
  at::Tensor expected = dtrain::kernels::furthest_point_sample(xyz, npoint, start);
  return {std::move(name), std::move(xyz), npoint, start, std::move(expected)};
}

// One cloud of `points` points on a 16 x 16 x ... grid, filled layer by
// layer (equal distances everywhere: ties on every path).
inline at::Tensor grid_cloud(int64_t points) {
  const at::Tensor cells = at::arange(points, at::kInt);
  return at::stack({cells % 16, cells.div(16, "floor") % 16, cells.div(256, "floor")}, 1)
      .to(at::kFloat)
      .unsqueeze(0);
}

// `batch` clouds of n points in 8 tight clumps far apart.
inline at::Tensor clumps_of(int64_t batch, int64_t n) {
  return (at::rand({batch, n, 3}) * 0.01 +
          at::arange(n).div(n / 8, "floor").to(at::kFloat).view({1, -1, 1}) * 3)
      .contiguous();
}

// Uniform clouds of 2 to 200 clouds of 1000, 2000 and 8192 points (2, 4 and
// 16 points a thread of the on-chip kernels) -> 512 from point 7.
inline std::vector<FpsCloud> uniform_fps_clouds() {
  std::vector<FpsCloud> clouds;
  for (int64_t batch : {2, 32, 200}) {
    for (int64_t n : {1000, 2000, 8192}) {
      clouds.push_back(fps_cloud("batch " + std::to_string(batch) + ", n " + std::to_string(n),
                                 at::rand({batch, n, 3}), 512, 7));
    }
  }
  return clouds;
}

// A 16^3 grid cut to 4096 points (equal distances everywhere), sampled to
// the last point; 8 distinct points repeated; 8 clumps; a cloud of 33 points
// (most warps padding only); Gaussian points sampled to the last one, whose
// picks are far apart; 5 points; one pick; NaN and infinite coordinates (a
// NaN point's distance never falls, so the CPU takes those points first, in
// index order, and every path must too).
inline std::vector<FpsCloud> adversarial_fps_clouds() {
  const at::Tensor small = at::rand({5, 33, 3});
  const at::Tensor non_finite = at::rand({2, 3000, 3})
                                    .index_put_({0, 7, 1}, NAN)
                                    .index_put_({0, 2999, 0}, INFINITY)
                                    .index_put_({1, 100, 2}, -INFINITY)
                                    .index_put_({1, 5, 0}, NAN);
  return {
      fps_cloud("grid", grid_cloud(4096), 4096, 5),
      fps_cloud("8 points repeated", at::rand({2, 8, 3}).repeat({1, 1000, 1}), 8000, 0),
      fps_cloud("clumps", clumps_of(3, 8192), 2048, 0),
      fps_cloud("33 points", small, 33, 32),
      fps_cloud("Gaussian, every point", at::randn({4, 8192, 3}), 8192, 3),
      fps_cloud("5 points", at::rand({3, 5, 3}), 5, 4),
      fps_cloud("one pick", small, 1, 20),
      fps_cloud("NaN and infinite coordinates", non_finite, 600, 1),
  };
}

// Expects `sample` (a CUDA kernel on the cloud's CUDA copy) to give the
// CPU's picks on every cloud; `setting` names the kernel in failures.
inline void expect_cpu_picks(
    const std::vector<FpsCloud>& clouds, const std::string& setting,
    const std::function<at::Tensor(const at::Tensor&, int64_t, int64_t)>& sample) {
  for (const FpsCloud& cloud : clouds) {
    const at::Tensor got = sample(cloud.xyz.cuda(), cloud.npoint, cloud.start);
    ASSERT_TRUE(got.is_cuda()) << cloud.name << " (" << setting << ")";
    EXPECT_TRUE(at::equal(got.cpu(), cloud.expected)) << cloud.name << " (" << setting << ")";
  }
}

}  // namespace dtrain::test
