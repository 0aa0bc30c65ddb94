// Ball query: one thread per (batch, centre), scanning the batch element's
// points in index order and stopping at nsample hits.
//
//   new_xyz [b][i][x y z]   xyz [b][j][x y z]   (float32)
//   idx     [b][i][s]: hits in index order, padded with the first hit,
//                      all 0 when there is none; count [b][i] = hits
#include "cuda_check.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

__global__ void ball_query_kernel(const float* __restrict__ new_xyz, const float* __restrict__ xyz,
                                  std::int64_t batch, std::int64_t m, std::int64_t n, float radius2,
                                  std::int64_t nsample, std::int64_t* __restrict__ idx,
                                  std::int64_t* __restrict__ count) {
  for (std::int64_t q = grid_start(); q < batch * m; q += grid_stride()) {
    const auto [qx, qy, qz, points] = neighbour_query(new_xyz, xyz, q, m, n);
    std::int64_t* row = idx + q * nsample;
    std::int64_t found = 0;
    for (std::int64_t j = 0; j < n && found < nsample; ++j) {
      const float d = squared_distance(qx, qy, qz, __ldg(points + 3 * j), __ldg(points + 3 * j + 1),
                                       __ldg(points + 3 * j + 2));
      if (d < radius2) {
        row[found++] = j;
      }
    }
    const std::int64_t pad = found > 0 ? row[0] : 0;
    for (std::int64_t s = found; s < nsample; ++s) {
      row[s] = pad;
    }
    count[q] = found;
  }
}

}  // namespace

void launch_ball_query(const float* new_xyz, const float* xyz, std::int64_t batch, std::int64_t m,
                       std::int64_t n, float radius2, std::int64_t nsample, std::int64_t* idx,
                       std::int64_t* count, cudaStream_t stream) {
  if (batch * m == 0) {
    return;
  }
  constexpr unsigned int kThreads = 256;
  ball_query_kernel<<<grid_for(batch * m, kThreads), kThreads, 0, stream>>>(
      new_xyz, xyz, batch, m, n, radius2, nsample, idx, count);
  DTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace dtrain::kernels::cuda
