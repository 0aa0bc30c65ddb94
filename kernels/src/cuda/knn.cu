// k nearest neighbours: one thread per (batch, query), keeping its best
// (distance, index) pairs sorted. An equal distance never displaces a lower
// index, as in the CPU kernel (NearestList in src/cpu/nearest_list.h), and
// the lists hold ranks, a NaN distance ranking as +inf (Note [NaN distances
// rank as +inf]); the rows get the distances back at the end.
//  - k <= 32: the list lives in registers, kList = 8, 16 or 32 entries (the
//    first k of the kList best are the k best, with the same ties), and an
//    insertion is one unrolled pass of compares and selects;
//  - larger k: the list lives in the thread's output row (global memory, so
//    any k fits; no fixed-size local array).
// The registers replace a row in global memory whose every insertion shifted
// entries through dependent global loads and stores: 0.71 ms at B = 8,
// N = 1024, 256 queries, k = 16 on an H200, 2.7x PyTorch's cdist + topk only.
//
//   new_xyz [b][i][x y z]   xyz [b][j][x y z]
//   dist2, idx [b][i][0..k): ascending distance, ties by lowest index
#include <limits>

#include "cuda_check.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

__global__ void knn_kernel(const float* __restrict__ new_xyz, const float* __restrict__ xyz,
                           std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
                           std::int64_t* __restrict__ idx, float* __restrict__ dist2) {
  for (std::int64_t q = grid_start(); q < batch * m; q += grid_stride()) {
    const auto [qx, qy, qz, points] = neighbour_query(new_xyz, xyz, q, m, n);
    float* row_dist = dist2 + q * k;
    std::int64_t* row_idx = idx + q * k;
    std::int64_t filled = 0;
    float worst = 0.0f;  // row_dist[k - 1] once the row is full
    for (std::int64_t j = 0; j < n; ++j) {
      const float d = distance_rank(squared_distance(
          qx, qy, qz, __ldg(points + 3 * j), __ldg(points + 3 * j + 1), __ldg(points + 3 * j + 2)));
      if (filled == k && !(d < worst)) {
        continue;
      }
      std::int64_t pos = filled < k ? filled++ : k - 1;
      while (pos > 0 && row_dist[pos - 1] > d) {
        row_dist[pos] = row_dist[pos - 1];
        row_idx[pos] = row_idx[pos - 1];
        --pos;
      }
      row_dist[pos] = d;
      row_idx[pos] = j;
      worst = row_dist[k - 1];
    }
    // The row holds ranks (k <= n, so it is full): back to distances.
    for (std::int64_t s = 0; s < k; ++s) {
      row_dist[s] = distance_of_entry(row_dist[s], qx, qy, qz, points + 3 * row_idx[s]);
    }
  }
}

// The list's entries past `filled` are empty; a new rank d goes after
// every filled entry <= d (ties keep the earlier, lower index), as in
// NearestList::offer. Once full, only d below the last entry enters, and the
// last entry leaves.
template <int kList>
__global__ void knn_registers_kernel(const float* __restrict__ new_xyz,
                                     const float* __restrict__ xyz, std::int64_t batch,
                                     std::int64_t m, std::int64_t n, std::int64_t k,
                                     std::int64_t* __restrict__ idx, float* __restrict__ dist2) {
  for (std::int64_t q = grid_start(); q < batch * m; q += grid_stride()) {
    const auto [qx, qy, qz, points] = neighbour_query(new_xyz, xyz, q, m, n);
    float best_d[kList];
    int best_j[kList];
#pragma unroll
    for (int s = 0; s < kList; ++s) {
      best_d[s] = 0.0f;
      best_j[s] = 0;
    }
    int filled = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const float d = distance_rank(squared_distance(
          qx, qy, qz, __ldg(points + 3 * j), __ldg(points + 3 * j + 1), __ldg(points + 3 * j + 2)));
      if (filled == kList && !(d < best_d[kList - 1])) {
        continue;
      }
      // after[s]: entry s comes after d (or is empty). From the top down,
      // entry s takes entry s - 1 when that one comes after d, else d when
      // entry s does.
#pragma unroll
      for (int s = kList - 1; s > 0; --s) {
        const bool previous_after = s - 1 >= filled || best_d[s - 1] > d;
        const bool this_after = s >= filled || best_d[s] > d;
        best_d[s] = previous_after ? best_d[s - 1] : (this_after ? d : best_d[s]);
        best_j[s] = previous_after ? best_j[s - 1] : (this_after ? static_cast<int>(j) : best_j[s]);
      }
      if (filled == 0 || best_d[0] > d) {
        best_d[0] = d;
        best_j[0] = static_cast<int>(j);
      }
      filled = filled < kList ? filled + 1 : kList;
    }
    float* row_dist = dist2 + q * k;
    std::int64_t* row_idx = idx + q * k;
#pragma unroll
    for (int s = 0; s < kList; ++s) {
      if (s < k) {
        row_dist[s] = distance_of_entry(best_d[s], qx, qy, qz,
                                        points + 3 * static_cast<std::int64_t>(best_j[s]));
        row_idx[s] = best_j[s];
      }
    }
  }
}

}  // namespace

void launch_knn(const float* new_xyz, const float* xyz, std::int64_t batch, std::int64_t m,
                std::int64_t n, std::int64_t k, std::int64_t* idx, float* dist2,
                cudaStream_t stream) {
  if (batch * m == 0) {
    return;
  }
  constexpr unsigned int kThreads = 128;
  const unsigned int blocks = grid_for(batch * m, kThreads);
  const bool int_indices = n <= std::numeric_limits<int>::max();
  if (!int_indices || k > 32) {
    knn_kernel<<<blocks, kThreads, 0, stream>>>(new_xyz, xyz, batch, m, n, k, idx, dist2);
  } else if (k <= 8) {
    knn_registers_kernel<8>
        <<<blocks, kThreads, 0, stream>>>(new_xyz, xyz, batch, m, n, k, idx, dist2);
  } else if (k <= 16) {
    knn_registers_kernel<16>
        <<<blocks, kThreads, 0, stream>>>(new_xyz, xyz, batch, m, n, k, idx, dist2);
  } else {
    knn_registers_kernel<32>
        <<<blocks, kThreads, 0, stream>>>(new_xyz, xyz, batch, m, n, k, idx, dist2);
  }
  DTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace dtrain::kernels::cuda
