// Ball query, kNN and three-NN on CPU: one task per range of (batch, query)
// pairs, each scanning the batch element's points in index order, a block
// of kBlock distances at a time (squared_distances.h: vectorised, same bits
// as Note [FPS distance] in src/cpu/furthest_point_sample.cpp). The points
// are first laid out as planes (B, 3, N) so the blocks load contiguously.
// kNN and three-NN on large clouds search a grid instead of scanning (Note
// [Nearest points through a grid] in nearest_grid.cpp), same answers.
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <tuple>

#include "../dispatch.h"
#include "../kernel_choice.h"
#include "nearest_grid.h"
#include "nearest_list.h"
#include "squared_distances.h"

namespace dtrain::kernels::detail {

namespace {

constexpr int64_t kBlock = 64;

// One batch element's points as planes x[n], y[n], z[n].
struct Planes {
  const float* x;
  const float* y;
  const float* z;
};

Planes planes_of(const at::Tensor& planes, int64_t b) {
  const int64_t n = planes.size(2);
  const float* base = planes.const_data_ptr<float>() + b * 3 * n;
  return {base, base + n, base + 2 * n};
}

// DTRAIN_CPU_NEAREST: auto (a grid for large clouds) or scan (every point);
// for tests and benchmarks.
enum class NearestPath { kAuto, kScan };

NearestPath nearest_path() {
  return static_cast<NearestPath>(env_choice("DTRAIN_CPU_NEAREST", {"auto", "scan"}));
}

// Runs fn(b, m) for every query, in parallel.
template <typename Fn>
void for_each_query(int64_t batch, int64_t queries, int64_t grain, const Fn& fn) {
  at::parallel_for(0, batch * queries, grain, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      fn(q / queries, q % queries);
    }
  });
}

// Whether a grid repays its building (Note [Nearest points through a
// grid]): clouds of kGridPoints or more, with k well below n.
constexpr int64_t kGridPoints = 1024;

bool grid_pays(int64_t n, int64_t k) {
  return n >= kGridPoints && 16 * k <= n;
}

// The k nearest of n points (planes p) to query q, scanning them in index
// order.
void scan_nearest(const Planes& p, int64_t n, const float* q, int64_t k, float* dist,
                  int64_t* idx) {
  NearestList best{dist, idx, k};
  float d[kBlock];
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t count = std::min(kBlock, n - begin);
    if (best.filled < k) {
      squared_distances(p.x + begin, p.y + begin, p.z + begin, count, q[0], q[1], q[2], d);
      for (int64_t t = 0; t < count; ++t) {
        best.offer(d[t], begin + t);
      }
      continue;
    }
    // Full: only points closer than the current k-th can enter, and after
    // the first blocks few are. One vector compare per 8 points finds
    // them; each is offered with its distance recomputed (same bits), in
    // index order, and offer() rechecks against the shrinking bound. The
    // bound is the k-th's rank: a NaN k-th (Note [NaN distances rank as
    // +inf]) admits every finite distance, where d < NaN would admit none.
    for (uint64_t closer = within_radius(p.x + begin, p.y + begin, p.z + begin, count, q[0], q[1],
                                         q[2], best.entry_bound());
         closer != 0; closer &= closer - 1) {
      const int64_t j = begin + __builtin_ctzll(closer);
      float dj = 0;
      squared_distances_scalar(p.x + j, p.y + j, p.z + j, 1, q[0], q[1], q[2], &dj);
      best.offer(dj, j);
    }
  }
}

// Rows of k nearest points into (dist, idx) of shape (B, M, k).
void nearest_k(const at::Tensor& new_xyz, const at::Tensor& xyz, int64_t k, float* dist_out,
               int64_t* idx_out) {
  const int64_t batch = new_xyz.size(0);
  const int64_t m = new_xyz.size(1);
  const int64_t n = xyz.size(1);
  const at::Tensor planes = xyz.transpose(1, 2).contiguous();
  const float* queries = new_xyz.const_data_ptr<float>();
  const NearestPath path = nearest_path();  // checked on every call
  if (!grid_pays(n, k) || path == NearestPath::kScan) {
    for_each_query(batch, m, /*grain=*/16, [&](int64_t b, int64_t i) {
      scan_nearest(planes_of(planes, b), n, queries + (b * m + i) * 3, k,
                   dist_out + (b * m + i) * k, idx_out + (b * m + i) * k);
    });
    return;
  }
  // One batch element at a time, so one grid lives at a time; its queries
  // in parallel.
  for (int64_t b = 0; b < batch; ++b) {
    const Planes p = planes_of(planes, b);
    std::optional<NearestGrid> grid;
    if (NearestGrid::grid_suits(p.x, p.y, p.z, n)) {
      grid.emplace(p.x, p.y, p.z, n, std::max<int64_t>(2, k / 2));
    }
    at::parallel_for(0, m, /*grain_size=*/16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float* q = queries + (b * m + i) * 3;
        float* dist = dist_out + (b * m + i) * k;
        int64_t* idx = idx_out + (b * m + i) * k;
        if (grid && std::isfinite(q[0]) && std::isfinite(q[1]) && std::isfinite(q[2])) {
          grid->nearest(q[0], q[1], q[2], k, dist, idx);
        } else {
          scan_nearest(p, n, q, k, dist, idx);
        }
      }
    });
  }
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> ball_query_cpu(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                                  float radius2, int64_t nsample) {
  const int64_t batch = new_xyz.size(0);
  const int64_t m = new_xyz.size(1);
  const int64_t n = xyz.size(1);
  const auto long_options = new_xyz.options().dtype(at::kLong);
  at::Tensor idx = at::empty({batch, m, nsample}, long_options);
  at::Tensor count = at::empty({batch, m}, long_options);
  const at::Tensor planes = xyz.transpose(1, 2).contiguous();
  const float* queries = new_xyz.const_data_ptr<float>();
  int64_t* idx_data = idx.mutable_data_ptr<int64_t>();
  int64_t* count_data = count.mutable_data_ptr<int64_t>();
  for_each_query(batch, m, /*grain=*/16, [&](int64_t b, int64_t i) {
    const float* q = queries + (b * m + i) * 3;
    const Planes p = planes_of(planes, b);
    int64_t* row = idx_data + (b * m + i) * nsample;
    int64_t found = 0;
    for (int64_t begin = 0; begin < n && found < nsample; begin += kBlock) {
      const int64_t count = std::min(kBlock, n - begin);
      uint64_t hits =
          within_radius(p.x + begin, p.y + begin, p.z + begin, count, q[0], q[1], q[2], radius2);
      for (; hits != 0 && found < nsample; hits &= hits - 1) {
        row[found++] = begin + __builtin_ctzll(hits);
      }
    }
    const int64_t pad = found > 0 ? row[0] : 0;
    for (int64_t s = found; s < nsample; ++s) {
      row[s] = pad;
    }
    count_data[b * m + i] = found;
  });
  return {idx, count};
}

std::tuple<at::Tensor, at::Tensor> knn_cpu(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                           int64_t k) {
  at::Tensor idx =
      at::empty({new_xyz.size(0), new_xyz.size(1), k}, new_xyz.options().dtype(at::kLong));
  at::Tensor dist2 = at::empty(idx.sizes(), new_xyz.options().dtype(at::kFloat));
  nearest_k(new_xyz, xyz, k, dist2.mutable_data_ptr<float>(), idx.mutable_data_ptr<int64_t>());
  return {idx, dist2};
}

std::tuple<at::Tensor, at::Tensor> three_nn_cpu(const at::Tensor& unknown,
                                                const at::Tensor& known) {
  at::Tensor idx =
      at::empty({unknown.size(0), unknown.size(1), 3}, unknown.options().dtype(at::kLong));
  at::Tensor dist2 = at::empty(idx.sizes(), unknown.options().dtype(at::kFloat));
  nearest_k(unknown, known, 3, dist2.mutable_data_ptr<float>(), idx.mutable_data_ptr<int64_t>());
  return {dist2, idx};
}

}  // namespace dtrain::kernels::detail
