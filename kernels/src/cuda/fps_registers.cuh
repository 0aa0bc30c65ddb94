// What the FPS kernels that keep each thread's points in registers share
// (furthest_point_sample_registers.cu, furthest_point_sample_leader.cu):
// the box around a warp's points, a thread's update of its points' running
// distances, and the mark of a pick among them.
#pragma once

#include "fps_common.cuh"
#include "point_common.cuh"

namespace dtrain::kernels::cuda::fps {

// The box around the real points (idx < n) of every thread of the warp;
// every lane gets it. A warp of padding only has an empty box (low +inf,
// high -inf), which no centre comes near.
template <int kPerThread>
__device__ inline void points_warp_box(const int (&idx)[kPerThread], int n,
                                       const float (&px)[kPerThread], const float (&py)[kPerThread],
                                       const float (&pz)[kPerThread], float (&low)[3],
                                       float (&high)[3]) {
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    low[a] = INFINITY;
    high[a] = -INFINITY;
  }
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    if (idx[s] < n) {
      grow_box(low, high, {px[s], py[s], pz[s]});
    }
  }
  warp_box(low, high);
}

// dist = min(dist, distance from the centre) for a thread's points, in the
// rounded arithmetic of Note [FPS distance]. fminf is one instruction where
// the CPU's `d < dist ? d : dist` is two, and the same here: they differ
// only when dist is NaN, and a running distance never is (+inf, a distance,
// -1 or -2); a NaN d keeps dist in both.
template <int kPerThread>
__device__ inline void update_distances(float cx, float cy, float cz, const float (&px)[kPerThread],
                                        const float (&py)[kPerThread],
                                        const float (&pz)[kPerThread], float (&dist)[kPerThread]) {
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    dist[s] = fminf(squared_distance(cx, cy, cz, px[s], py[s], pz[s]), dist[s]);
  }
}

// The point `pick`, if this thread holds it, is sampled now: its running
// distance becomes -1, below every point still to pick.
template <int kPerThread>
__device__ inline void mark_sampled(const int (&idx)[kPerThread], unsigned int pick,
                                    float (&dist)[kPerThread]) {
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    if (idx[s] == static_cast<int>(pick)) {
      dist[s] = -1.0f;
    }
  }
}

}  // namespace dtrain::kernels::cuda::fps
