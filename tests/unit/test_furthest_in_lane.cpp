// The register FPS kernel's per-thread helpers (src/furthest_in_lane.h),
// compiled here by the host compiler and checked against a brute force: the
// GPU runs the same code, and its picks must equal the CPU kernel's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "furthest_in_lane.h"

namespace {

using dtrain::kernels::detail::furthest_in_registers;
using dtrain::kernels::detail::sort_in_registers;

template <int kSize>
void expect_sorts(std::mt19937& random, int range) {
  std::uniform_int_distribution<int> value(0, range);
  for (int trial = 0; trial < 200; ++trial) {
    int v[kSize];
    for (int& x : v) {
      x = value(random);
    }
    std::vector<int> expected(v, v + kSize);
    std::sort(expected.begin(), expected.end());
    sort_in_registers(v);
    EXPECT_EQ(std::vector<int>(v, v + kSize), expected) << kSize << " values up to " << range;
  }
}

// Every size the kernel deals (1 to 16 points a thread), with and without
// repeated values (padding repeats the index n).
TEST(FurthestInLane, SortInRegistersSorts) {
  std::mt19937 random(3);
  for (int range : {3, 100000}) {
    expect_sorts<1>(random, range);
    expect_sorts<2>(random, range);
    expect_sorts<4>(random, range);
    expect_sorts<8>(random, range);
    expect_sorts<16>(random, range);
  }
}

// The brute force: the largest distance, and the lowest index holding it.
std::pair<float, int> furthest_by_scan(const std::vector<float>& dist,
                                       const std::vector<int>& idx) {
  const float largest = *std::max_element(dist.begin(), dist.end());
  int lowest = std::numeric_limits<int>::max();
  for (size_t s = 0; s < dist.size(); ++s) {
    if (dist[s] == largest) {
      lowest = std::min(lowest, idx[s]);
    }
  }
  return {largest, lowest};
}

template <int kSize>
void expect_furthest(std::mt19937& random, const std::vector<float>& values) {
  std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
  std::uniform_int_distribution<int> index(0, 8191);
  for (int trial = 0; trial < 500; ++trial) {
    float dist[kSize];
    int idx[kSize];
    for (int s = 0; s < kSize; ++s) {
      dist[s] = values[pick(random)];
      idx[s] = index(random);
    }
    // The kernel sorts a thread's indices once and the distances follow the
    // points, so any assignment of distances to sorted indices can occur.
    sort_in_registers(idx);
    float furthest = 0.0f;
    int at = -1;
    furthest_in_registers(dist, idx, furthest, at);
    const auto [expected_distance, expected_index] = furthest_by_scan(
        std::vector<float>(dist, dist + kSize), std::vector<int>(idx, idx + kSize));
    ASSERT_EQ(furthest, expected_distance) << kSize << " points, trial " << trial;
    ASSERT_EQ(at, expected_index) << kSize << " points, trial " << trial;
  }
}

// Few distinct values, so most trials tie: the running distances of sampled
// (-1) and padding (-2) points, +inf for points no centre has reached yet,
// zero for duplicates of a centre, and repeated finite distances (a grid).
TEST(FurthestInLane, FurthestInRegistersTakesTheLowestIndexOnTies) {
  std::mt19937 random(11);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> ties = {-2.0f, -1.0f, 0.0f, 0.25f, 0.25f, 1.0f, inf};
  const std::vector<float> sampled_only = {-2.0f, -1.0f};
  for (const auto& values : {ties, sampled_only}) {
    expect_furthest<1>(random, values);
    expect_furthest<2>(random, values);
    expect_furthest<4>(random, values);
    expect_furthest<8>(random, values);
    expect_furthest<16>(random, values);
  }
}

// Each position in turn holds the one largest distance: the tree carries it
// through every level, with its index.
TEST(FurthestInLane, FurthestInRegistersFindsEveryPosition) {
  for (int position = 0; position < 16; ++position) {
    float dist[16];
    int idx[16];
    for (int s = 0; s < 16; ++s) {
      dist[s] = 1.0f;
      idx[s] = 10 * s;
    }
    dist[position] = 2.0f;
    float furthest = 0.0f;
    int at = -1;
    furthest_in_registers(dist, idx, furthest, at);
    EXPECT_EQ(furthest, 2.0f);
    EXPECT_EQ(at, 10 * position) << "the furthest point at position " << position;
  }
}

}  // namespace
