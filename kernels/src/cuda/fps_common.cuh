// Device helpers shared by the FPS kernels that order a cloud in space
// (furthest_point_sample_registers.cu, furthest_point_sample_striped.cu,
// furthest_point_sample_chunks.cu).
#pragma once

#include <cstdint>

#include "../morton.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda::fps {

constexpr unsigned int kWarp = 32;
constexpr unsigned int kFullMask = 0xffffffffu;
constexpr unsigned int kNoIndex = 0xffffffffu;

// A running distance as an integer that orders the same way: a non-negative
// float's bits order like unsigned integers; +1 keeps 0 for sampled (-1) and
// padding (-2) points, below every point still to pick.
__device__ inline unsigned int distance_key(float running) {
  return running >= 0.0f ? __float_as_uint(running) + 1u : 0u;
}

// The running distance a key stands for (-1 for "nothing left to pick").
__device__ inline float key_distance(unsigned int key) {
  return key > 0 ? __uint_as_float(key - 1u) : -1.0f;
}

using ::dtrain::kernels::detail::spread_bits;  // morton.h

// The Morton code of a point on a (2^bits)^3 grid over the box [low, high].
template <int kBits>
__device__ inline unsigned int morton_code(const float (&p)[3], const float (&low)[3],
                                           const float (&high)[3]) {
  constexpr float kTop = static_cast<float>((1 << kBits) - 1);
  unsigned int cell[3];
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    const float extent = high[a] - low[a];
    const float scaled = extent > 0.0f ? (p[a] - low[a]) * (kTop / extent) : 0.0f;
    cell[a] = __float2uint_rz(fminf(fmaxf(scaled, 0.0f), kTop));
  }
  return spread_bits(cell[0]) | (spread_bits(cell[1]) << 1) | (spread_bits(cell[2]) << 2);
}

// Minimum (or maximum) of v over a block of kThreads; every thread gets it.
// scratch: kThreads / 32 floats of shared memory.
template <unsigned int kThreads>
__device__ inline float block_extreme(float v, bool maximum, float* scratch) {
  for (unsigned int offset = kWarp / 2; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(kFullMask, v, offset);
    v = maximum ? fmaxf(v, other) : fminf(v, other);
  }
  __syncthreads();  // the previous call's readers are done with scratch
  if (threadIdx.x % kWarp == 0) {
    scratch[threadIdx.x / kWarp] = v;
  }
  __syncthreads();
  v = scratch[0];
  for (unsigned int w = 1; w < kThreads / kWarp; ++w) {
    v = maximum ? fmaxf(v, scratch[w]) : fminf(v, scratch[w]);
  }
  return v;
}

// Grows the box [low, high] to hold p.
__device__ inline void grow_box(float (&low)[3], float (&high)[3], const float (&p)[3]) {
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    low[a] = fminf(low[a], p[a]);
    high[a] = fmaxf(high[a], p[a]);
  }
}

// The box around every lane's box; every lane of the warp gets it.
__device__ inline void warp_box(float (&low)[3], float (&high)[3]) {
#pragma unroll
  for (unsigned int offset = kWarp / 2; offset > 0; offset /= 2) {
#pragma unroll
    for (int a = 0; a < 3; ++a) {
      low[a] = fminf(low[a], __shfl_xor_sync(kFullMask, low[a], offset));
      high[a] = fmaxf(high[a], __shfl_xor_sync(kFullMask, high[a], offset));
    }
  }
}

// The bounding box of a cloud of n points (x, y, z rows) over a block.
template <unsigned int kThreads>
__device__ inline void block_bounding_box(const float* points, int n, float* scratch,
                                          float (&low)[3], float (&high)[3]) {
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    low[a] = INFINITY;
    high[a] = -INFINITY;
  }
  for (int j = threadIdx.x; j < n; j += kThreads) {
    grow_box(low, high, {points[3 * j], points[3 * j + 1], points[3 * j + 2]});
  }
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    low[a] = block_extreme<kThreads>(low[a], false, scratch);
    high[a] = block_extreme<kThreads>(high[a], true, scratch);
  }
}

// Squared distance from (cx, cy, cz) to the box [low, high]: the distance to
// its nearest point, with squared_distance's rounded arithmetic, so it is
// never above the computed distance of any point in the box (rounding is
// monotone).
__device__ inline float box_squared_distance(float cx, float cy, float cz, const float (&low)[3],
                                             const float (&high)[3]) {
  return squared_distance(cx, cy, cz, fminf(fmaxf(cx, low[0]), high[0]),
                          fminf(fmaxf(cy, low[1]), high[1]), fminf(fmaxf(cz, low[2]), high[2]));
}

}  // namespace dtrain::kernels::cuda::fps
