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
//  - each pick tests boxes, 8 at a time: a box no nearer the new centre
//    than its largest running distance holds no point the centre can change
//    (exact: the box distance is computed with the same rounded arithmetic
//    as a point's, on the box point nearest the centre, and rounding is
//    monotone, so it is never above any point's distance). First the boxes
//    of groups of 32 chunks, then the chunks of the groups that pass; the
//    chunks that pass are updated, 8 points at a time (one cloud of 2^20
//    points: 18 us a pick with groups, 75 without);
//  - the pick is the holder of the best group's best chunk (largest
//    distance, ties to the lowest holder): the lowest index among the
//    points at the cloud's largest running distance, as in the plain loop
//    (Note [FPS distance]).
// Distances are Note [FPS distance]'s, so the picks equal the plain loop's.
// A cloud with an infinite or NaN coordinate goes to the plain loop: its NaN
// distances would not order the same way.
#include "furthest_point_sample_spatial.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "../morton.h"
#include "fps_update.h"

namespace dtrain::kernels::detail {

namespace {

constexpr int64_t kChunk = 32;  // points a chunk
constexpr int64_t kGroup = 32;  // chunks a group
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

// Boxes, each with the largest running distance of the points inside and
// the lowest index holding it, as planes. Padding boxes are empty (low
// +inf, high -inf) with largest -inf: never near a centre, never the best.
struct Boxes {
  std::vector<float> low_x, low_y, low_z, high_x, high_y, high_z, largest;
  std::vector<int32_t> holder;

  void assign_empty(int64_t count) {
    const auto size = static_cast<size_t>(count);
    for (auto* v : {&low_x, &low_y, &low_z}) {
      v->assign(size, std::numeric_limits<float>::infinity());
    }
    for (auto* v : {&high_x, &high_y, &high_z}) {
      v->assign(size, -std::numeric_limits<float>::infinity());
    }
    largest.assign(size, -std::numeric_limits<float>::infinity());
    holder.assign(size, kPaddingIndex);
  }

  void grow(int64_t i, float x, float y, float z, float x_high, float y_high, float z_high) {
    low_x[i] = std::min(low_x[i], x);
    low_y[i] = std::min(low_y[i], y);
    low_z[i] = std::min(low_z[i], z);
    high_x[i] = std::max(high_x[i], x_high);
    high_y[i] = std::max(high_y[i], y_high);
    high_z[i] = std::max(high_z[i], z_high);
  }

  // Bit t: box first + t may hold a point the centre brings closer (its box
  // is nearer than its largest distance, or the comparison is unordered).
  // first is a multiple of 8, and the arrays hold first + 8 boxes.
  uint32_t near_mask(int64_t first, float cx, float cy, float cz) const {
#if defined(__x86_64__)
    if (cpu_has_avx2()) {
      return near_mask_avx2(first, cx, cy, cz);
    }
#endif
    uint32_t mask = 0;
    for (int64_t t = 0; t < 8; ++t) {
      const int64_t i = first + t;
      const float bx = std::min(std::max(cx, low_x[i]), high_x[i]);
      const float by = std::min(std::max(cy, low_y[i]), high_y[i]);
      const float bz = std::min(std::max(cz, low_z[i]), high_z[i]);
      float d = 0.0f;
      squared_distances_scalar(&bx, &by, &bz, 1, cx, cy, cz, &d);
      mask |= static_cast<uint32_t>(!(d >= largest[i])) << t;
    }
    return mask;
  }

#if defined(__x86_64__)
  __attribute__((target("avx2"))) uint32_t near_mask_avx2(int64_t first, float cx, float cy,
                                                          float cz) const {
    const __m256 vcx = _mm256_set1_ps(cx);
    const __m256 vcy = _mm256_set1_ps(cy);
    const __m256 vcz = _mm256_set1_ps(cz);
    // min(max(c, low), high) in the scalar path's operand order.
    const __m256 bx = _mm256_min_ps(_mm256_max_ps(vcx, _mm256_loadu_ps(&low_x[first])),
                                    _mm256_loadu_ps(&high_x[first]));
    const __m256 by = _mm256_min_ps(_mm256_max_ps(vcy, _mm256_loadu_ps(&low_y[first])),
                                    _mm256_loadu_ps(&high_y[first]));
    const __m256 bz = _mm256_min_ps(_mm256_max_ps(vcz, _mm256_loadu_ps(&low_z[first])),
                                    _mm256_loadu_ps(&high_z[first]));
    const __m256 dx = _mm256_sub_ps(bx, vcx);
    const __m256 dy = _mm256_sub_ps(by, vcy);
    const __m256 dz = _mm256_sub_ps(bz, vcz);
    const __m256 d = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
                                   _mm256_mul_ps(dz, dz));
    const __m256 near = _mm256_cmp_ps(d, _mm256_loadu_ps(&largest[first]), _CMP_NGE_UQ);
    return static_cast<uint32_t>(_mm256_movemask_ps(near));
  }
#endif
};

#if defined(__x86_64__)
__attribute__((target("avx2"))) float largest_of_avx2(const float* values, int64_t count) {
  __m256 largest = _mm256_loadu_ps(values);
  for (int64_t i = 8; i < count; i += 8) {
    largest = _mm256_max_ps(largest, _mm256_loadu_ps(values + i));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, largest);
  return *std::max_element(lanes, lanes + 8);
}

__attribute__((target("avx2"))) int32_t holder_of_avx2(const float* values, const int32_t* holders,
                                                       int64_t count, float largest) {
  const __m256 target = _mm256_set1_ps(largest);
  const __m256i none = _mm256_set1_epi32(kPaddingIndex);
  __m256i lowest = none;
  for (int64_t i = 0; i < count; i += 8) {
    const __m256i equal =
        _mm256_castps_si256(_mm256_cmp_ps(_mm256_loadu_ps(values + i), target, _CMP_EQ_OQ));
    const __m256i holder = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(holders + i));
    lowest = _mm256_min_epi32(lowest, _mm256_blendv_epi8(none, holder, equal));
  }
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), lowest);
  return *std::min_element(lanes, lanes + 8);
}
#endif

// The largest of count (a multiple of 8) values.
float largest_of(const float* values, int64_t count) {
#if defined(__x86_64__)
  if (cpu_has_avx2()) {
    return largest_of_avx2(values, count);
  }
#endif
  return *std::max_element(values, values + count);
}

// The lowest of the holders whose value equals `largest` (count a multiple
// of 8).
int32_t holder_of(const float* values, const int32_t* holders, int64_t count, float largest) {
#if defined(__x86_64__)
  if (cpu_has_avx2()) {
    return holder_of_avx2(values, holders, count, largest);
  }
#endif
  int32_t holder = kPaddingIndex;
  for (int64_t i = 0; i < count; ++i) {
    if (values[i] == largest) {
      holder = std::min(holder, holders[i]);
    }
  }
  return holder;
}

// The cloud in Morton order, in chunks of kChunk points and groups of
// kGroup chunks: a pick tests the groups' boxes, then the chunks' boxes of
// the groups it cannot rule out, then updates those chunks' points. (A
// chunk's box lies in its group's, so the group test never skips a chunk
// the chunk test would keep.) Padding points have running distance -2,
// below every real point; every real chunk holds a real point.
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
        const auto cell = static_cast<uint32_t>(scaled > 0.0f ? std::min(scaled, top) : 0.0f);
        code |= spread_bits(cell) << a;
      }
      records[static_cast<size_t>(j)] = {(uint64_t{code} << 32) | static_cast<uint64_t>(j),
                                         point[0], point[1], point[2]};
    }
    sort_by_code(records, 3 * bits);

    const int64_t chunks = (n + kChunk - 1) / kChunk;
    groups_ = (chunks + kGroup - 1) / kGroup;
    const auto padded = static_cast<size_t>(chunks * kChunk);
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
    for (int64_t p = n; p < chunks * kChunk; ++p) {  // padding sits on the last real point
      x_[p] = x_[n - 1];
      y_[p] = y_[n - 1];
      z_[p] = z_[n - 1];
    }
    // Whole groups of chunks, whole vectors of groups; every real box
    // starts at largest +inf: no test may skip what was never updated.
    chunks_.assign_empty(groups_ * kGroup);
    groups_boxes_.assign_empty((groups_ + 7) / 8 * 8);
    for (int64_t c = 0; c < chunks; ++c) {
      for (int64_t p = c * kChunk; p < std::min(n, (c + 1) * kChunk); ++p) {
        chunks_.grow(c, x_[p], y_[p], z_[p], x_[p], y_[p], z_[p]);
      }
      chunks_.largest[c] = std::numeric_limits<float>::infinity();
      const int64_t g = c / kGroup;
      groups_boxes_.grow(g, chunks_.low_x[c], chunks_.low_y[c], chunks_.low_z[c], chunks_.high_x[c],
                         chunks_.high_y[c], chunks_.high_z[c]);
      groups_boxes_.largest[g] = std::numeric_limits<float>::infinity();
    }
  }

  // Updates the chunks the centre may change, then takes the next pick and
  // marks it sampled.
  int64_t pick_after(float cx, float cy, float cz) {
    for (int64_t g0 = 0; g0 < groups_; g0 += 8) {
      for (uint32_t near_groups = groups_boxes_.near_mask(g0, cx, cy, cz); near_groups != 0;
           near_groups &= near_groups - 1) {
        const int64_t g = g0 + __builtin_ctz(near_groups);
        for (int64_t c0 = g * kGroup; c0 < (g + 1) * kGroup; c0 += 8) {
          for (uint32_t near = chunks_.near_mask(c0, cx, cy, cz); near != 0; near &= near - 1) {
            update_chunk(c0 + __builtin_ctz(near), cx, cy, cz);
          }
        }
        refresh_group(g);
      }
    }
    const int64_t g = best_of(groups_boxes_, 0, static_cast<int64_t>(groups_boxes_.largest.size()));
    const int64_t c = best_of(chunks_, g * kGroup, kGroup);
    const int32_t pick = chunks_.holder[c];
    for (int64_t p = c * kChunk; p < (c + 1) * kChunk; ++p) {
      if (index_[p] == pick) {
        dist_[p] = -1.0f;
      }
    }
    refresh_chunk(c);
    refresh_group(g);
    return pick;
  }

 private:
  // The plain update on one chunk (fps_update.h), which also finds the
  // chunk's largest distance; then its holder.
  void update_chunk(int64_t c, float cx, float cy, float cz) {
    const int64_t first = c * kChunk;
    const Best best =
        update(Cloud{&x_[first], &y_[first], &z_[first], &dist_[first], kChunk}, cx, cy, cz);
    chunks_.largest[c] = best.value;
    chunks_.holder[c] = holder_of(&dist_[first], &index_[first], kChunk, best.value);
  }

  void refresh_chunk(int64_t c) {
    const float* dist = &dist_[c * kChunk];
    chunks_.largest[c] = largest_of(dist, kChunk);
    chunks_.holder[c] = holder_of(dist, &index_[c * kChunk], kChunk, chunks_.largest[c]);
  }

  void refresh_group(int64_t g) {
    const float* largest = &chunks_.largest[g * kGroup];
    groups_boxes_.largest[g] = largest_of(largest, kGroup);
    groups_boxes_.holder[g] =
        holder_of(largest, &chunks_.holder[g * kGroup], kGroup, groups_boxes_.largest[g]);
  }

  // Among boxes [first, first + count): the one with the largest distance,
  // ties to the lowest holder (a holder lies in one box only; the distances
  // are never NaN, as the coordinates are finite).
  static int64_t best_of(const Boxes& boxes, int64_t first, int64_t count) {
    const float largest = largest_of(&boxes.largest[first], count);
    const int32_t holder = holder_of(&boxes.largest[first], &boxes.holder[first], count, largest);
    int64_t i = first;
    while (boxes.largest[i] != largest || boxes.holder[i] != holder) {
      ++i;
    }
    return i;
  }

  int64_t groups_ = 0;
  std::vector<float> x_, y_, z_, dist_;  // by sorted position
  std::vector<int32_t> index_;           // sorted position -> index
  Boxes chunks_;                         // by chunk, groups_ * kGroup of them
  Boxes groups_boxes_;                   // by group, padded to whole vectors
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
