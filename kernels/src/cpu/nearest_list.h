// Internal: the k nearest points offered so far, ascending by (squared
// distance, index), for kNN and three-NN (neighbours.cpp scans the points in
// index order, nearest_grid.cpp visits them cell by cell; the order of
// offers does not change the list). CUDA keeps the same rule: an equal
// distance never displaces a lower index (src/cuda/knn.cu, three_nn.cu).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace dtrain::kernels::detail {

// Note [NaN distances rank as +inf]: a squared distance that is NaN (a NaN
// coordinate in the query or the point) ranks as +inf: after every finite
// distance, and among the +inf and NaN ones by lowest index. Compared raw,
// a NaN entry could never be displaced (every comparison with NaN is
// false), so a NaN point offered first stayed first and the row stopped
// being sorted. The list keeps the distance itself (NaN stays NaN); only
// the order uses the rank. CUDA ranks the same way (src/cuda/knn.cu,
// three_nn.cu: distance_rank in point_common.cuh).
inline float distance_rank(float d) {
  return std::isnan(d) ? std::numeric_limits<float>::infinity() : d;
}

struct NearestList {
  float* dist;   // k entries
  int64_t* idx;  // k entries
  int64_t k;
  int64_t filled = 0;

  // Whether (d, j) comes before entry pos, by (rank, index).
  bool before(float d, int64_t j, int64_t pos) const {
    const float a = distance_rank(d);
    const float b = distance_rank(dist[pos]);
    return a < b || (a == b && j < idx[pos]);
  }

  // A bound that every point able to enter a full list, offered in
  // increasing index, lies strictly below: the k-th rank (a later point
  // that ties with it has a higher index and stays out).
  float entry_bound() const { return distance_rank(dist[k - 1]); }

  void offer(float d, int64_t j) {
    if (filled == k && !before(d, j, k - 1)) {
      return;
    }
    int64_t pos = filled < k ? filled++ : k - 1;
    while (pos > 0 && before(d, j, pos - 1)) {
      dist[pos] = dist[pos - 1];
      idx[pos] = idx[pos - 1];
      --pos;
    }
    dist[pos] = d;
    idx[pos] = j;
  }
};

}  // namespace dtrain::kernels::detail
