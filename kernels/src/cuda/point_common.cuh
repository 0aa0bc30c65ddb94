// Device helpers shared by the PointNet++ .cu files: the accumulation type
// of each feature dtype, conversions, rounded (never fused) arithmetic so
// results match the CPU kernels bit for bit, and grid-stride loops.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include <cstdint>

#include "cuda_check.cuh"

namespace dtrain::kernels::cuda {

// float32 accumulation for float32/float16/bfloat16, float64 for float64.
template <typename T>
struct AccType {
  using type = float;
};
template <>
struct AccType<double> {
  using type = double;
};
template <typename T>
using acc_t = typename AccType<T>::type;

__device__ inline float to_acc(float v) {
  return v;
}
__device__ inline double to_acc(double v) {
  return v;
}
__device__ inline float to_acc(__half v) {
  return __half2float(v);
}
__device__ inline float to_acc(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ inline T from_acc(acc_t<T> v);
template <>
__device__ inline float from_acc<float>(float v) {
  return v;
}
template <>
__device__ inline double from_acc<double>(double v) {
  return v;
}
template <>
__device__ inline __half from_acc<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ inline __nv_bfloat16 from_acc<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Rounded multiply and add: nvcc may not contract these into an FMA.
__device__ inline float mul_rn(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ inline double mul_rn(double a, double b) {
  return __dmul_rn(a, b);
}
__device__ inline float add_rn(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ inline double add_rn(double a, double b) {
  return __dadd_rn(a, b);
}

// Note [FPS distance] (src/cpu/furthest_point_sample.cpp): point minus
// query, then dx*dx + dy*dy + dz*dz left to right, no FMA.
__device__ inline float squared_distance(float qx, float qy, float qz, float px, float py,
                                         float pz) {
  const float dx = __fsub_rn(px, qx);
  const float dy = __fsub_rn(py, qy);
  const float dz = __fsub_rn(pz, qz);
  return __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz));
}

// Note [NaN distances rank as +inf] (src/cpu/nearest_list.h): kNN and
// three-NN order points by this rank, so a NaN distance comes after every
// finite one and ties with +inf, broken by the lower index. The kernels
// keep ranks in their lists (never NaN, so their plain comparisons are a
// total order and the insertion code is the CPU's) and give each row back
// its distances with distance_of_entry.
__device__ inline float distance_rank(float d) {
  return isnan(d) ? CUDART_INF_F : d;
}

// The distance of a list entry of rank `rank` at point p: the rank itself,
// except that +inf may stand for NaN, so that one is recomputed (the same
// rounded operations, so the same bits as when it was ranked).
__device__ inline float distance_of_entry(float rank, float qx, float qy, float qz,
                                          const float* p) {
  return rank == CUDART_INF_F ? squared_distance(qx, qy, qz, __ldg(p), __ldg(p + 1), __ldg(p + 2))
                              : rank;
}

// Query q of a neighbour search (queries [b][i][x y z], i < per_batch) and
// the points of its batch element (points [b][j][x y z], j < n).
struct NeighbourQuery {
  float x, y, z;
  const float* points;
};

__device__ inline NeighbourQuery neighbour_query(const float* queries, const float* points,
                                                 std::int64_t q, std::int64_t per_batch,
                                                 std::int64_t n) {
  return {queries[3 * q], queries[3 * q + 1], queries[3 * q + 2], points + (q / per_batch) * n * 3};
}

// Blocks for a grid-stride loop over `work` items: enough to fill the GPU,
// never more than the grid allows.
inline unsigned int grid_for(std::int64_t work, unsigned int threads) {
  const std::int64_t blocks = (work + threads - 1) / threads;
  constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 20;
  return static_cast<unsigned int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

__device__ inline std::int64_t grid_start() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

}  // namespace dtrain::kernels::cuda
