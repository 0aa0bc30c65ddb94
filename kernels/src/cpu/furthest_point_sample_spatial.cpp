// Furthest point sampling of one cloud on one CPU thread, skipping the
// parts of the cloud a pick cannot change (Note [FPS in spatial chunks on
// the CPU]).
//
// Note [FPS in spatial chunks on the CPU]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The plain loop updates every point's running distance at every pick.
// Late in a run only the points near the new centre can change, as the CUDA
// kernels exploit (Note [FPS on registers in striped chunks]). Here:
//  - the points are sorted by the Morton code of their place in the cloud's
//    bounding box (a grid of about one cell per chunk; ties by index) and
//    cut into chunks of 32 consecutive points, compact in space; each chunk
//    keeps its bounding box, its largest running distance and the lowest
//    index holding it;
//  - each pick tests the chunks' boxes, 8 at a time: a chunk whose box is
//    no nearer the new centre than its largest running distance cannot
//    change (exact: the box distance is computed with the same rounded
//    arithmetic as a point's, on the box point nearest the centre, and
//    rounding is monotone, so it is never above any point's distance);
//    the others are updated, 8 points at a time;
//  - the pick is the chunk with the largest distance, ties to the lowest
//    holder: the lowest index among the points at the cloud's largest
//    running distance, as in the plain loop (Note [FPS distance]).
// Distances are Note [FPS distance]'s, so the picks equal the plain loop's.
// A cloud with an infinite or NaN coordinate goes to the plain loop: its NaN
// distances would not order the same way.
#include "furthest_point_sample_spatial.h"

#include "../morton.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dtrain::kernels::detail {

namespace {

constexpr int64_t kChunk = 32;
constexpr int32_t kPaddingIndex = std::numeric_limits<int32_t>::max();

// Bits per axis of the Morton grid for n points: about one cell per chunk of
// kChunk points (a finer grid sorts slower and makes the chunks no more
// compact); 1 to 10.
int grid_bits(int64_t n) {
  int bits = 1;
  while (bits < 10 && (int64_t{1} << (3 * bits)) * kChunk < n) {
    ++bits;
  }
  return bits;
}

// A point on its way into Morton order: code << 32 | index, and where it is.
struct Record {
  uint64_t key;
  float x, y, z;
};

// Sorts records by code (code_bits bits), stably: a least-significant-digit
// radix sort, in one pass up to 16 bits (a histogram of 512 KiB at most),
// else in passes of half the bits. The coordinates travel with the keys:
// std::sort of the keys, then gathering each point's coordinates from the
// input, took 80 and 30 ms of a million-point cloud's setup.
void sort_by_code(std::vector<Record>& records, int code_bits) {
  const int digit_bits = code_bits <= 16 ? code_bits : (code_bits + 1) / 2;
  const size_t buckets = size_t{1} << digit_bits;
  std::vector<Record> other(records.size());
  for (int shift = 32; shift < 32 + code_bits; shift += digit_bits) {
    std::vector<size_t> start(buckets + 1, 0);
    for (const Record& record : records) {
      ++start[((record.key >> shift) & (buckets - 1)) + 1];
    }
    for (size_t b = 1; b <= buckets; ++b) {
      start[b] += start[b - 1];
    }
    for (const Record& record : records) {
      other[start[(record.key >> shift) & (buckets - 1)]++] = record;
    }
    records.swap(other);
  }
}

// Note [FPS distance]: point minus centre, x*x + y*y + z*z left to right.
float squared_distance(float px, float py, float pz, float cx, float cy, float cz) {
  const float dx = px - cx;
  const float dy = py - cy;
  const float dz = pz - cz;
  return dx * dx + dy * dy + dz * dz;
}

// The cloud in Morton order, padded to whole chunks (padding: running
// distance -2, below every real point, so never the largest of a chunk that
// holds a real point; every chunk holds one).
class SpatialCloud {
 public:
  SpatialCloud(const float* xyz, int64_t n, int64_t start) {
    float low[3] = {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::infinity()};
    float high[3] = {-low[0], -low[1], -low[2]};
    for (int64_t j = 0; j < n; ++j) {
      for (int a = 0; a < 3; ++a) {
        low[a] = std::min(low[a], xyz[3 * j + a]);
        high[a] = std::max(high[a], xyz[3 * j + a]);
      }
    }
    const int bits = grid_bits(n);
    const float top = static_cast<float>((1 << bits) - 1);
    std::vector<Record> records(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      const float* point = xyz + 3 * j;
      uint32_t code = 0;
      for (int a = 0; a < 3; ++a) {
        const float extent = high[a] - low[a];
        const float scaled = extent > 0.0f ? (point[a] - low[a]) * (top / extent) : 0.0f;
        // NaN (a NaN or infinite coordinate) lands in cell 0.
        const auto cell = static_cast<uint32_t>(scaled > 0.0f ? std::min(scaled, top) : 0.0f);
        code |= spread_bits(cell) << a;
      }
      records[static_cast<size_t>(j)] = {(uint64_t{code} << 32) | static_cast<uint64_t>(j),
                                         point[0], point[1], point[2]};
    }
    sort_by_code(records, 3 * bits);

    chunks_ = (n + kChunk - 1) / kChunk;
    const auto padded = static_cast<size_t>(chunks_ * kChunk);
    x_.resize(padded);
    y_.resize(padded);
    z_.resize(padded);
    dist_.assign(padded, -2.0f);
    index_.assign(padded, kPaddingIndex);
    for (int64_t p = 0; p < n; ++p) {
      const Record& record = records[static_cast<size_t>(p)];
      const auto j = static_cast<int32_t>(record.key & 0xffffffffu);
      x_[p] = record.x;
      y_[p] = record.y;
      z_[p] = record.z;
      dist_[p] = j == start ? -1.0f : std::numeric_limits<float>::infinity();
      index_[p] = j;
    }
    for (int64_t p = n; p < chunks_ * kChunk; ++p) {  // padding sits on the last real point
      x_[p] = x_[n - 1];
      y_[p] = y_[n - 1];
      z_[p] = z_[n - 1];
    }
    // Boxes padded to whole vectors of 8 chunks; the extra chunks' boxes are
    // empty and their largest distance -inf, so they are never near.
    const auto box_count = static_cast<size_t>((chunks_ + 7) / 8 * 8);
    for (auto* v : {&low_x_, &low_y_, &low_z_}) {
      v->assign(box_count, std::numeric_limits<float>::infinity());
    }
    for (auto* v : {&high_x_, &high_y_, &high_z_}) {
      v->assign(box_count, -std::numeric_limits<float>::infinity());
    }
    largest_.assign(box_count, -std::numeric_limits<float>::infinity());
    holder_.assign(box_count, kPaddingIndex);
    for (int64_t c = 0; c < chunks_; ++c) {
      for (int64_t p = c * kChunk; p < std::min(n, (c + 1) * kChunk); ++p) {
        low_x_[c] = std::min(low_x_[c], x_[p]);
        low_y_[c] = std::min(low_y_[c], y_[p]);
        low_z_[c] = std::min(low_z_[c], z_[p]);
        high_x_[c] = std::max(high_x_[c], x_[p]);
        high_y_[c] = std::max(high_y_[c], y_[p]);
        high_z_[c] = std::max(high_z_[c], z_[p]);
      }
      // Every point is still to be updated: no box test may skip a chunk.
      largest_[c] = std::numeric_limits<float>::infinity();
    }
  }

  // Updates the chunks the centre may change, then takes the next pick and
  // marks it sampled.
  int64_t pick_after(float cx, float cy, float cz) {
    for_each_near_chunk(cx, cy, cz, [&](int64_t c) {
      update_chunk(c, cx, cy, cz);
      refresh_chunk(c);
    });
    const int64_t c = best_chunk();
    const int32_t pick = holder_[c];
    for (int64_t p = c * kChunk; p < (c + 1) * kChunk; ++p) {
      if (index_[p] == pick) {
        dist_[p] = -1.0f;
      }
    }
    refresh_chunk(c);
    return pick;
  }

 private:
  template <typename Fn>
  void for_each_near_chunk(float cx, float cy, float cz, const Fn& fn) {
#if defined(__x86_64__)
    if (has_avx2()) {
      for (int64_t c = 0; c < chunks_; c += 8) {
        for (uint32_t near = near_mask_avx2(c, cx, cy, cz); near != 0; near &= near - 1) {
          fn(c + __builtin_ctz(near));
        }
      }
      return;
    }
#endif
    for (int64_t c = 0; c < chunks_; ++c) {
      const float bx = std::min(std::max(cx, low_x_[c]), high_x_[c]);
      const float by = std::min(std::max(cy, low_y_[c]), high_y_[c]);
      const float bz = std::min(std::max(cz, low_z_[c]), high_z_[c]);
      if (!(squared_distance(bx, by, bz, cx, cy, cz) >= largest_[c])) {
        fn(c);
      }
    }
  }

  void update_chunk(int64_t c, float cx, float cy, float cz) {
#if defined(__x86_64__)
    if (has_avx2()) {
      update_chunk_avx2(c, cx, cy, cz);
      return;
    }
#endif
    for (int64_t p = c * kChunk; p < (c + 1) * kChunk; ++p) {
      const float d = squared_distance(x_[p], y_[p], z_[p], cx, cy, cz);
      dist_[p] = d < dist_[p] ? d : dist_[p];
    }
  }

  // The chunk's largest running distance and the lowest index holding it.
  void refresh_chunk(int64_t c) {
#if defined(__x86_64__)
    if (has_avx2()) {
      largest_[c] = largest_avx2(&dist_[c * kChunk], kChunk);
      holder_[c] = holder_avx2(&dist_[c * kChunk], &index_[c * kChunk], kChunk, largest_[c]);
      return;
    }
#endif
    float largest = -std::numeric_limits<float>::infinity();
    for (int64_t p = c * kChunk; p < (c + 1) * kChunk; ++p) {
      largest = std::max(largest, dist_[p]);
    }
    int32_t holder = kPaddingIndex;
    for (int64_t p = c * kChunk; p < (c + 1) * kChunk; ++p) {
      if (dist_[p] == largest) {
        holder = std::min(holder, index_[p]);
      }
    }
    largest_[c] = largest;
    holder_[c] = holder;
  }

  // The chunk holding the point to pick: the largest distance, ties to the
  // lowest holder (the lowest index among the points at that distance).
  int64_t best_chunk() const {
    float largest = -std::numeric_limits<float>::infinity();
    int32_t holder = kPaddingIndex;
#if defined(__x86_64__)
    if (has_avx2()) {  // the chunks' arrays are padded to whole vectors
      const auto count = static_cast<int64_t>(largest_.size());
      largest = largest_avx2(largest_.data(), count);
      holder = holder_avx2(largest_.data(), holder_.data(), count, largest);
    } else
#endif
    {
      for (int64_t c = 0; c < chunks_; ++c) {
        largest = std::max(largest, largest_[c]);
      }
      for (int64_t c = 0; c < chunks_; ++c) {
        if (largest_[c] == largest) {
          holder = std::min(holder, holder_[c]);
        }
      }
    }
    int64_t c = 0;  // a holder is in one chunk only (the distances are never NaN)
    while (largest_[c] != largest || holder_[c] != holder) {
      ++c;
    }
    return c;
  }

#if defined(__x86_64__)
  static bool has_avx2() {
    static const bool supported = __builtin_cpu_supports("avx2");
    return supported;
  }

  // Bit k: chunk c + k may change (its box is nearer the centre than its
  // largest distance, or the comparison is unordered).
  __attribute__((target("avx2"))) uint32_t near_mask_avx2(int64_t c, float cx, float cy,
                                                          float cz) const {
    const __m256 vcx = _mm256_set1_ps(cx);
    const __m256 vcy = _mm256_set1_ps(cy);
    const __m256 vcz = _mm256_set1_ps(cz);
    // min(max(c, low), high) in the scalar path's operand order.
    const __m256 bx = _mm256_min_ps(_mm256_max_ps(vcx, _mm256_loadu_ps(&low_x_[c])),
                                    _mm256_loadu_ps(&high_x_[c]));
    const __m256 by = _mm256_min_ps(_mm256_max_ps(vcy, _mm256_loadu_ps(&low_y_[c])),
                                    _mm256_loadu_ps(&high_y_[c]));
    const __m256 bz = _mm256_min_ps(_mm256_max_ps(vcz, _mm256_loadu_ps(&low_z_[c])),
                                    _mm256_loadu_ps(&high_z_[c]));
    const __m256 dx = _mm256_sub_ps(bx, vcx);
    const __m256 dy = _mm256_sub_ps(by, vcy);
    const __m256 dz = _mm256_sub_ps(bz, vcz);
    const __m256 d = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
                                   _mm256_mul_ps(dz, dz));
    const __m256 near = _mm256_cmp_ps(d, _mm256_loadu_ps(&largest_[c]), _CMP_NGE_UQ);
    return static_cast<uint32_t>(_mm256_movemask_ps(near));
  }

  // The largest of count (a multiple of 8) values.
  __attribute__((target("avx2"))) static float largest_avx2(const float* values, int64_t count) {
    __m256 largest = _mm256_loadu_ps(values);
    for (int64_t p = 8; p < count; p += 8) {
      largest = _mm256_max_ps(largest, _mm256_loadu_ps(values + p));
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, largest);
    return *std::max_element(lanes, lanes + 8);
  }

  // The lowest of the indices whose value equals `largest` (count a
  // multiple of 8).
  __attribute__((target("avx2"))) static int32_t holder_avx2(const float* values,
                                                             const int32_t* indices, int64_t count,
                                                             float largest) {
    const __m256 target = _mm256_set1_ps(largest);
    const __m256i none = _mm256_set1_epi32(kPaddingIndex);
    __m256i lowest = none;
    for (int64_t p = 0; p < count; p += 8) {
      const __m256i equal =
          _mm256_castps_si256(_mm256_cmp_ps(_mm256_loadu_ps(values + p), target, _CMP_EQ_OQ));
      const __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(indices + p));
      lowest = _mm256_min_epi32(lowest, _mm256_blendv_epi8(none, index, equal));
    }
    alignas(32) int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), lowest);
    return *std::min_element(lanes, lanes + 8);
  }

  __attribute__((target("avx2"))) void update_chunk_avx2(int64_t c, float cx, float cy, float cz) {
    const __m256 vcx = _mm256_set1_ps(cx);
    const __m256 vcy = _mm256_set1_ps(cy);
    const __m256 vcz = _mm256_set1_ps(cz);
    for (int64_t p = c * kChunk; p < (c + 1) * kChunk; p += 8) {
      const __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(&x_[p]), vcx);
      const __m256 dy = _mm256_sub_ps(_mm256_loadu_ps(&y_[p]), vcy);
      const __m256 dz = _mm256_sub_ps(_mm256_loadu_ps(&z_[p]), vcz);
      const __m256 d = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
                                     _mm256_mul_ps(dz, dz));
      // _mm256_min_ps(a, b) is (a < b ? a : b), as in the scalar path.
      _mm256_storeu_ps(&dist_[p], _mm256_min_ps(d, _mm256_loadu_ps(&dist_[p])));
    }
  }
#endif

  int64_t chunks_ = 0;
  std::vector<float> x_, y_, z_, dist_;                                  // by sorted position
  std::vector<int32_t> index_;                                           // sorted position -> index
  std::vector<float> low_x_, low_y_, low_z_, high_x_, high_y_, high_z_;  // by chunk
  std::vector<float> largest_;
  std::vector<int32_t> holder_;
};

}  // namespace

bool sample_one_spatial(const float* xyz, int64_t n, int64_t npoint, int64_t start, int64_t* out) {
  // Infinite or NaN coordinates make NaN distances, which the chunks' maxima
  // do not order as the plain loop does.
  if (!std::all_of(xyz, xyz + 3 * n, [](float v) { return std::isfinite(v); })) {
    return false;
  }
  SpatialCloud cloud(xyz, n, start);
  int64_t selected = start;
  out[0] = selected;
  for (int64_t i = 1; i < npoint; ++i) {
    selected = cloud.pick_after(xyz[3 * selected], xyz[3 * selected + 1], xyz[3 * selected + 2]);
    out[i] = selected;
  }
  return true;
}

}  // namespace dtrain::kernels::detail
