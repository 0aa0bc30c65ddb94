// k nearest neighbours: one thread per (batch, query), keeping its k best
// (distance, index) pairs sorted in its own output row (global memory, so
// any k fits; no fixed-size local array). An equal distance never displaces
// a lower index, as in the CPU kernel (NearestK in src/cpu/neighbours.cpp).
//
//   new_xyz [b][i][x y z]   xyz [b][j][x y z]
//   dist2, idx [b][i][0..k): ascending distance, ties by lowest index
#include "cuda_check.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

__global__ void knn_kernel(const float* __restrict__ new_xyz, const float* __restrict__ xyz,
                           std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
                           std::int64_t* __restrict__ idx, float* __restrict__ dist2) {
  for (std::int64_t q = grid_start(); q < batch * m; q += grid_stride()) {
    const std::int64_t b = q / m;
    const float qx = new_xyz[3 * q];
    const float qy = new_xyz[3 * q + 1];
    const float qz = new_xyz[3 * q + 2];
    const float* points = xyz + b * n * 3;
    float* row_dist = dist2 + q * k;
    std::int64_t* row_idx = idx + q * k;
    std::int64_t filled = 0;
    float worst = 0.0f;  // row_dist[k - 1] once the row is full
    for (std::int64_t j = 0; j < n; ++j) {
      const float d = squared_distance(qx, qy, qz, __ldg(points + 3 * j), __ldg(points + 3 * j + 1),
                                       __ldg(points + 3 * j + 2));
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
  knn_kernel<<<grid_for(batch * m, kThreads), kThreads, 0, stream>>>(new_xyz, xyz, batch, m, n, k,
                                                                     idx, dist2);
  DTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace dtrain::kernels::cuda
