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
using dtrain::kernels::detail::furthest_two_in_registers;
using dtrain::kernels::detail::kBelowEveryDistance;
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

// The largest distance at every position but the furthest point's (the
// lowest index holding the largest), counting repeats of the largest.
float second_by_scan(const std::vector<float>& dist, const std::vector<int>& idx, int furthest_at) {
  float second = kBelowEveryDistance;
  for (size_t s = 0; s < dist.size(); ++s) {
    if (idx[s] != furthest_at) {
      second = std::max(second, dist[s]);
    }
  }
  return second;
}

// Random distances from `values` at sorted random indices: the thread's
// furthest point by the tree, and, where the indices are distinct (as a
// thread's real points are; padding repeats n but never holds a furthest
// point above a real one), its runner-up.
template <int kSize>
void expect_lane_helpers(std::mt19937& random, const std::vector<float>& values) {
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
    const std::vector<float> dists(dist, dist + kSize);
    const std::vector<int> idxs(idx, idx + kSize);
    const auto [expected_distance, expected_index] = furthest_by_scan(dists, idxs);
    float furthest = 0.0f;
    int at = -1;
    furthest_in_registers(dist, idx, furthest, at);
    ASSERT_EQ(furthest, expected_distance) << kSize << " points, trial " << trial;
    ASSERT_EQ(at, expected_index) << kSize << " points, trial " << trial;
    if (std::adjacent_find(idxs.begin(), idxs.end()) != idxs.end()) {
      continue;
    }
    const float expected_second = second_by_scan(dists, idxs, expected_index);
    float second = 0.0f;
    furthest_two_in_registers(dist, idx, furthest, at, second);
    ASSERT_EQ(furthest, expected_distance) << kSize << " points, trial " << trial;
    ASSERT_EQ(at, expected_index) << kSize << " points, trial " << trial;
    ASSERT_EQ(second, expected_second) << kSize << " points, trial " << trial;
  }
}

// Every size the kernel deals (1 to 16 points a thread).
void expect_lane_helpers_at_every_size(std::mt19937& random, const std::vector<float>& values) {
  expect_lane_helpers<1>(random, values);
  expect_lane_helpers<2>(random, values);
  expect_lane_helpers<4>(random, values);
  expect_lane_helpers<8>(random, values);
  expect_lane_helpers<16>(random, values);
}

// Few distinct values, so most trials tie: the running distances of sampled
// (-1) and padding (-2) points, +inf for points no centre has reached yet,
// zero for duplicates of a centre, and repeated finite distances (a grid).
const std::vector<float> kTies = {
    -2.0f, -1.0f, 0.0f, 0.25f, 0.25f, 1.0f, std::numeric_limits<float>::infinity()};

TEST(FurthestInLane, FurthestInRegistersTakesTheLowestIndexOnTies) {
  std::mt19937 random(11);
  const std::vector<float> sampled_only = {-2.0f, -1.0f};
  for (const auto& values : {kTies, sampled_only}) {
    expect_lane_helpers_at_every_size(random, values);
  }
}

// A round of two picks needs each thread's runner-up (Note [FPS on registers
// in rounds of picks]): with the same ties as the furthest point's, and
// repeats of the largest value counted; on ties and on distances that
// seldom repeat.
TEST(FurthestInLane, TheRunnerUpIsTheLargestAtTheOtherPositions) {
  std::mt19937 random(5);
  std::vector<float> spread;
  std::uniform_real_distribution<float> value(0.0f, 4.0f);
  for (int v = 0; v < 64; ++v) {
    spread.push_back(value(random));
  }
  for (const auto& values : {kTies, spread}) {
    expect_lane_helpers_at_every_size(random, values);
  }
}

// Two positions hold the largest: the runner-up equals it, whichever side
// of the tree each lies on.
TEST(FurthestInLane, ARepeatedLargestIsItsOwnRunnerUp) {
  for (int first = 0; first < 16; ++first) {
    for (int other = first + 1; other < 16; ++other) {
      float dist[16];
      int idx[16];
      for (int s = 0; s < 16; ++s) {
        dist[s] = 1.0f;
        idx[s] = 3 * s;
      }
      dist[first] = dist[other] = 2.0f;
      float furthest = 0.0f;
      float second = 0.0f;
      int at = -1;
      furthest_two_in_registers(dist, idx, furthest, at, second);
      EXPECT_EQ(at, 3 * first);
      EXPECT_EQ(second, 2.0f) << "the largest at " << first << " and " << other;
    }
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
