// Internal: the plain FPS update, shared by the plain loop, the split loop
// (furthest_point_sample.cpp) and the spatial kernel's chunks
// (furthest_point_sample_spatial.cpp): each point's running distance to the
// sampled set lowered by one new centre, and the first maximum found.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "squared_distances.h"

namespace dtrain::kernels::detail {

struct Best {
  float value;
  int64_t index;
};

// Points of one batch element, as the kernel reads them.
struct Cloud {
  const float* x;
  const float* y;
  const float* z;
  float* dist;
  int64_t n;
};

// dist[j] = min(dist[j], d(j, c)) for every j from `begin` on; returns the
// first maximum of those updated dist[] and `best` (found before `begin`).
inline Best update_scalar_from(const Cloud& cloud, float cx, float cy, float cz, int64_t begin,
                               Best best) {
  for (int64_t j = begin; j < cloud.n; ++j) {
    const float dx = cloud.x[j] - cx;
    const float dy = cloud.y[j] - cy;
    const float dz = cloud.z[j] - cz;
    const float d = dx * dx + dy * dy + dz * dz;
    const float current = d < cloud.dist[j] ? d : cloud.dist[j];
    cloud.dist[j] = current;
    if (current > best.value) {
      best = {current, j};
    }
  }
  return best;
}

// dist[j] = min(dist[j], d(j, c)) for every j; returns the first maximum of
// the updated dist[].
inline Best update_scalar(const Cloud& cloud, float cx, float cy, float cz) {
  return update_scalar_from(cloud, cx, cy, cz, 0, Best{-2.0f, 0});
}

#if defined(__x86_64__)
// The same, eight points at a time. Every operation is an IEEE single
// multiply, add, subtract, min or compare, exactly as in update_scalar, so
// the results are bitwise equal. Needs n < 2^31 (int32 lanes).
__attribute__((target("avx2"))) inline Best update_avx2(const Cloud& cloud, float cx, float cy,
                                                        float cz) {
  const __m256 vcx = _mm256_set1_ps(cx);
  const __m256 vcy = _mm256_set1_ps(cy);
  const __m256 vcz = _mm256_set1_ps(cz);
  __m256 best_value = _mm256_set1_ps(-2.0f);
  __m256i best_index = _mm256_setzero_si256();
  __m256i lane_index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i step = _mm256_set1_epi32(8);
  int64_t j = 0;
  for (; j + 8 <= cloud.n; j += 8) {
    const __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(cloud.x + j), vcx);
    const __m256 dy = _mm256_sub_ps(_mm256_loadu_ps(cloud.y + j), vcy);
    const __m256 dz = _mm256_sub_ps(_mm256_loadu_ps(cloud.z + j), vcz);
    const __m256 d = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
                                   _mm256_mul_ps(dz, dz));
    // _mm256_min_ps(a, b) is (a < b ? a : b), as in update_scalar.
    const __m256 current = _mm256_min_ps(d, _mm256_loadu_ps(cloud.dist + j));
    _mm256_storeu_ps(cloud.dist + j, current);
    // Strictly greater: each lane keeps its first maximum.
    const __m256 greater = _mm256_cmp_ps(current, best_value, _CMP_GT_OQ);
    best_value = _mm256_blendv_ps(best_value, current, greater);
    best_index = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(best_index),
                                                      _mm256_castsi256_ps(lane_index), greater));
    lane_index = _mm256_add_epi32(lane_index, step);
  }
  alignas(32) float values[8];
  alignas(32) int32_t indices[8];
  _mm256_store_ps(values, best_value);
  _mm256_store_si256(reinterpret_cast<__m256i*>(indices), best_index);
  Best best{-2.0f, 0};
  for (int lane = 0; lane < 8; ++lane) {
    if (values[lane] > best.value || (values[lane] == best.value && indices[lane] < best.index)) {
      best = {values[lane], indices[lane]};
    }
  }
  // The tail, in index order after every lane.
  return update_scalar_from(cloud, cx, cy, cz, j, best);
}
#endif

inline Best update(const Cloud& cloud, float cx, float cy, float cz) {
#if defined(__x86_64__)
  if (cpu_has_avx2() && cloud.n < (int64_t{1} << 31)) {
    return update_avx2(cloud, cx, cy, cz);
  }
#endif
  return update_scalar(cloud, cx, cy, cz);
}

}  // namespace dtrain::kernels::detail
