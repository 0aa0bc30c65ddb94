// Internal: squared distances from one query to a block of points stored as
// planes (x[], y[], z[]), eight at a time with AVX2 where the CPU has it.
// Every lane does exactly the scalar operations of Note [FPS distance]
// (src/cpu/furthest_point_sample.cpp): point minus query, then
// dx*dx + dy*dy + dz*dz left to right, no FMA. So the SIMD and scalar paths,
// and the CUDA kernels, give the same bits.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cpu_features.h"

namespace dtrain::kernels::detail {

inline void squared_distances_scalar(const float* x, const float* y, const float* z, int64_t count,
                                     float qx, float qy, float qz, float* out) {
  for (int64_t j = 0; j < count; ++j) {
    const float dx = x[j] - qx;
    const float dy = y[j] - qy;
    const float dz = z[j] - qz;
    out[j] = dx * dx + dy * dy + dz * dz;
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) inline void squared_distances_avx2(const float* x, const float* y,
                                                                   const float* z, int64_t count,
                                                                   float qx, float qy, float qz,
                                                                   float* out) {
  const __m256 vqx = _mm256_set1_ps(qx);
  const __m256 vqy = _mm256_set1_ps(qy);
  const __m256 vqz = _mm256_set1_ps(qz);
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    const __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(x + j), vqx);
    const __m256 dy = _mm256_sub_ps(_mm256_loadu_ps(y + j), vqy);
    const __m256 dz = _mm256_sub_ps(_mm256_loadu_ps(z + j), vqz);
    _mm256_storeu_ps(out + j,
                     _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
                                   _mm256_mul_ps(dz, dz)));
  }
  squared_distances_scalar(x + j, y + j, z + j, count - j, qx, qy, qz, out + j);
}
#endif

// out[j] = |p_j - q|^2 for j < count.
inline void squared_distances(const float* x, const float* y, const float* z, int64_t count,
                              float qx, float qy, float qz, float* out) {
#if defined(__x86_64__)
  if (cpu_has_avx2()) {
    squared_distances_avx2(x, y, z, count, qx, qy, qz, out);
    return;
  }
#endif
  squared_distances_scalar(x, y, z, count, qx, qy, qz, out);
}

// Bit t of the result is set when |p_t - q|^2 < radius2, for t < count <= 64
// (ball query's radius; kNN's current k-th distance).
inline uint64_t within_radius_scalar(const float* x, const float* y, const float* z, int64_t count,
                                     float qx, float qy, float qz, float radius2) {
  float d[64];
  squared_distances_scalar(x, y, z, count, qx, qy, qz, d);
  uint64_t mask = 0;
  for (int64_t t = 0; t < count; ++t) {
    mask |= static_cast<uint64_t>(d[t] < radius2) << t;
  }
  return mask;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) inline uint64_t within_radius_avx2(const float* x, const float* y,
                                                                   const float* z, int64_t count,
                                                                   float qx, float qy, float qz,
                                                                   float radius2) {
  const __m256 vqx = _mm256_set1_ps(qx);
  const __m256 vqy = _mm256_set1_ps(qy);
  const __m256 vqz = _mm256_set1_ps(qz);
  const __m256 vr2 = _mm256_set1_ps(radius2);
  uint64_t mask = 0;
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    const __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(x + j), vqx);
    const __m256 dy = _mm256_sub_ps(_mm256_loadu_ps(y + j), vqy);
    const __m256 dz = _mm256_sub_ps(_mm256_loadu_ps(z + j), vqz);
    const __m256 d = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
                                   _mm256_mul_ps(dz, dz));
    const auto lanes = static_cast<uint64_t>(
        static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(d, vr2, _CMP_LT_OQ))));
    mask |= lanes << j;
  }
  if (j < count) {
    mask |= within_radius_scalar(x + j, y + j, z + j, count - j, qx, qy, qz, radius2) << j;
  }
  return mask;
}
#endif

inline uint64_t within_radius(const float* x, const float* y, const float* z, int64_t count,
                              float qx, float qy, float qz, float radius2) {
#if defined(__x86_64__)
  if (cpu_has_avx2()) {
    return within_radius_avx2(x, y, z, count, qx, qy, qz, radius2);
  }
#endif
  return within_radius_scalar(x, y, z, count, qx, qy, qz, radius2);
}

}  // namespace dtrain::kernels::detail
