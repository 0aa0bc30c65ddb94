// Internal: the k nearest points offered so far, ascending by (squared
// distance, index), for kNN and three-NN (neighbours.cpp scans the points in
// index order, nearest_grid.cpp visits them cell by cell; the order of
// offers does not change the list). CUDA keeps the same rule: an equal
// distance never displaces a lower index (src/cuda/knn.cu, three_nn.cu).
#pragma once

#include <cstdint>

namespace dtrain::kernels::detail {

struct NearestList {
  float* dist;   // k entries
  int64_t* idx;  // k entries
  int64_t k;
  int64_t filled = 0;

  // Whether (d, j) comes before entry pos.
  bool before(float d, int64_t j, int64_t pos) const {
    return d < dist[pos] || (d == dist[pos] && j < idx[pos]);
  }

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
