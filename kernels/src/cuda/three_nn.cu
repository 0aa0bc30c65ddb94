// Three nearest neighbours: one thread per (batch, unknown point), the three
// best (distance, index) pairs in registers, with the insertion rule of the
// CPU kernel (an equal distance never displaces a lower index). The three
// hold ranks, a NaN distance ranking as +inf (Note [NaN distances rank as
// +inf]); the row gets the distances back at the end.
//
//   unknown [b][i][x y z]   known [b][j][x y z]   (m >= 3)
//   dist2, idx [b][i][0..3): ascending distance, ties by lowest index
#include "cuda_check.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

__global__ void three_nn_kernel(const float* __restrict__ unknown, const float* __restrict__ known,
                                std::int64_t batch, std::int64_t n, std::int64_t m,
                                float* __restrict__ dist2, std::int64_t* __restrict__ idx) {
  for (std::int64_t q = grid_start(); q < batch * n; q += grid_stride()) {
    const auto [qx, qy, qz, points] = neighbour_query(unknown, known, q, n, m);
    float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f;
    std::int64_t i0 = 0, i1 = 0, i2 = 0;
    int filled = 0;
    for (std::int64_t j = 0; j < m; ++j) {
      const float d = distance_rank(squared_distance(
          qx, qy, qz, __ldg(points + 3 * j), __ldg(points + 3 * j + 1), __ldg(points + 3 * j + 2)));
      if (filled == 3 && !(d < d2)) {
        continue;
      }
      // Insert at position `pos` (the CPU's NearestList::offer, unrolled).
      int pos = filled < 3 ? filled++ : 2;
      if (pos == 2 && d1 > d) {
        d2 = d1;
        i2 = i1;
        pos = 1;
      }
      if (pos == 1 && d0 > d) {
        d1 = d0;
        i1 = i0;
        pos = 0;
      }
      if (pos == 0) {
        d0 = d;
        i0 = j;
      } else if (pos == 1) {
        d1 = d;
        i1 = j;
      } else {
        d2 = d;
        i2 = j;
      }
    }
    dist2[3 * q] = distance_of_entry(d0, qx, qy, qz, points + 3 * i0);
    dist2[3 * q + 1] = distance_of_entry(d1, qx, qy, qz, points + 3 * i1);
    dist2[3 * q + 2] = distance_of_entry(d2, qx, qy, qz, points + 3 * i2);
    idx[3 * q] = i0;
    idx[3 * q + 1] = i1;
    idx[3 * q + 2] = i2;
  }
}

}  // namespace

void launch_three_nn(const float* unknown, const float* known, std::int64_t batch, std::int64_t n,
                     std::int64_t m, float* dist2, std::int64_t* idx, cudaStream_t stream) {
  if (batch * n == 0) {
    return;
  }
  constexpr unsigned int kThreads = 256;
  three_nn_kernel<<<grid_for(batch * n, kThreads), kThreads, 0, stream>>>(unknown, known, batch, n,
                                                                          m, dist2, idx);
  DTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace dtrain::kernels::cuda
