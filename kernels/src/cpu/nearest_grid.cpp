// Note [Nearest points through a grid]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// kNN and three-NN scan every point for every query. For a large cloud the
// points are first counting-sorted into a uniform grid of cubic cells (a
// few points a cell, over the axes the cloud spans; index order within a
// cell). A query then visits the cells in shells of growing Chebyshev
// distance around its own cell, offering each point to a list ordered by
// (distance, index) — the scan's order, whatever the visiting order — and
// stops once its list is full and the k-th distance is below the distance
// to the nearest unvisited cell. That bound is taken with margins for the
// rounding of a point's cell and of the distances (an absolute margin on
// the bound, a relative one on its square), so an unvisited point is always
// strictly farther than the k-th: it could not enter, not even on a tie.
// Distances are computed as in the scan (squared_distances.h), so the
// answer is the scan's, bit for bit.
#include "nearest_grid.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "nearest_list.h"
#include "squared_distances.h"

namespace dtrain::kernels::detail {

namespace {

constexpr int64_t kMaxCellsPerAxis = 1024;
constexpr int64_t kBlock = 64;  // distances computed at a time

}  // namespace

bool NearestGrid::grid_suits(const float* x, const float* y, const float* z, int64_t n) {
  for (const float* plane : {x, y, z}) {
    if (!std::all_of(plane, plane + n, [](float v) { return std::isfinite(v); })) {
      return false;
    }
  }
  return true;
}

NearestGrid::NearestGrid(const float* x, const float* y, const float* z, int64_t n,
                         int64_t points_per_cell) {
  const float* planes[3] = {x, y, z};
  double extent[3];
  double largest = 0.0;
  for (int a = 0; a < 3; ++a) {
    const auto [low, high] = std::minmax_element(planes[a], planes[a] + n);
    low_[a] = *low;
    extent[a] = static_cast<double>(*high) - static_cast<double>(*low);
    largest = std::max(largest, extent[a]);
  }
  // Cubic cells, about points_per_cell points a cell over the axes the cloud
  // spans (a flat cloud gets one layer of cells).
  const double cells_wanted =
      std::max(1.0, static_cast<double>(n) / static_cast<double>(points_per_cell));
  double volume = 1.0;
  int dims = 0;
  for (const double e : extent) {
    if (e > largest * 1e-6) {
      volume *= e;
      ++dims;
    }
  }
  double size = dims == 0 ? 1.0 : std::pow(volume / cells_wanted, 1.0 / dims);
  for (const double e : extent) {
    size = std::max(size, e / static_cast<double>(kMaxCellsPerAxis - 1));
  }
  size_ = static_cast<float>(size > 0.0 ? size : 1.0);
  int64_t total = 1;
  for (int a = 0; a < 3; ++a) {
    cells_[a] =
        std::clamp<int64_t>(static_cast<int64_t>(extent[a] / size_) + 1, 1, kMaxCellsPerAxis);
    total *= cells_[a];
  }
  // Counting sort by cell, stable: index order within a cell.
  std::vector<int64_t> cell(static_cast<size_t>(n));
  start_.assign(static_cast<size_t>(total + 1), 0);
  for (int64_t j = 0; j < n; ++j) {
    cell[j] = (cell_of(0, x[j]) * cells_[1] + cell_of(1, y[j])) * cells_[2] + cell_of(2, z[j]);
    ++start_[cell[j] + 1];
  }
  for (int64_t c = 0; c < total; ++c) {
    start_[c + 1] += start_[c];
  }
  std::vector<int64_t> next(start_.begin(), start_.end() - 1);
  x_.resize(n);
  y_.resize(n);
  z_.resize(n);
  index_.resize(n);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t p = next[cell[j]]++;
    x_[p] = x[j];
    y_[p] = y[j];
    z_[p] = z[j];
    index_[p] = j;
  }
}

int64_t NearestGrid::cell_of(int axis, float coordinate) const {
  const float t = (coordinate - low_[axis]) / size_;
  if (!(t > 0.0f)) {
    return 0;
  }
  return static_cast<int64_t>(std::min(t, static_cast<float>(cells_[axis] - 1)));
}

void NearestGrid::nearest(float qx, float qy, float qz, int64_t k, float* dist,
                          int64_t* idx) const {
  NearestList best{dist, idx, k};
  const float q[3] = {qx, qy, qz};
  int64_t home[3];
  double scale = 0.0;  // the magnitudes the margins are relative to
  for (int a = 0; a < 3; ++a) {
    home[a] = cell_of(a, q[a]);
    scale = std::max(scale, std::abs(static_cast<double>(q[a])) +
                                std::abs(static_cast<double>(low_[a])) +
                                static_cast<double>(size_) * static_cast<double>(cells_[a]));
  }
  const double margin = 1e-5 * scale + 1e-3 * static_cast<double>(size_);
  float d[kBlock];
  // The cells (cx, cy, z_lo..z_hi) are consecutive in the sorted points.
  auto visit = [&](int64_t cx, int64_t cy, int64_t z_lo, int64_t z_hi) {
    const int64_t row = (cx * cells_[1] + cy) * cells_[2];
    const int64_t end = start_[row + z_hi + 1];
    for (int64_t begin = start_[row + z_lo]; begin < end; begin += kBlock) {
      const int64_t count = std::min(kBlock, end - begin);
      squared_distances(&x_[begin], &y_[begin], &z_[begin], count, qx, qy, qz, d);
      for (int64_t t = 0; t < count; ++t) {
        best.offer(d[t], index_[begin + t]);
      }
    }
  };
  for (int64_t shell = 0;; ++shell) {
    int64_t lo[3], hi[3];
    bool everything = true;
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::max<int64_t>(home[a] - shell, 0);
      hi[a] = std::min<int64_t>(home[a] + shell, cells_[a] - 1);
      everything = everything && lo[a] == 0 && hi[a] == cells_[a] - 1;
    }
    // The cells of this shell: Chebyshev distance `shell` from home. A whole
    // z column where x or y is on the shell's face, else its two z ends.
    for (int64_t cx = lo[0]; cx <= hi[0]; ++cx) {
      const bool x_face = std::abs(cx - home[0]) == shell;
      for (int64_t cy = lo[1]; cy <= hi[1]; ++cy) {
        if (x_face || std::abs(cy - home[1]) == shell) {
          visit(cx, cy, lo[2], hi[2]);
        } else {
          if (home[2] - shell >= 0) {
            visit(cx, cy, home[2] - shell, home[2] - shell);
          }
          if (home[2] + shell < cells_[2]) {
            visit(cx, cy, home[2] + shell, home[2] + shell);
          }
        }
      }
    }
    if (everything) {
      return;
    }
    if (best.filled < k) {
      continue;
    }
    // The distance to the nearest unvisited cell: to the nearest face of the
    // visited box that has cells beyond it.
    double bound = std::numeric_limits<double>::infinity();
    for (int a = 0; a < 3; ++a) {
      if (lo[a] > 0) {
        bound = std::min(bound, static_cast<double>(q[a]) -
                                    (static_cast<double>(low_[a]) +
                                     static_cast<double>(lo[a]) * static_cast<double>(size_)));
      }
      if (hi[a] < cells_[a] - 1) {
        bound = std::min(bound, static_cast<double>(low_[a]) +
                                    static_cast<double>(hi[a] + 1) * static_cast<double>(size_) -
                                    static_cast<double>(q[a]));
      }
    }
    bound -= margin;
    if (bound > 0.0 && static_cast<double>(dist[k - 1]) < bound * bound * (1.0 - 1e-5)) {
      return;
    }
  }
}

}  // namespace dtrain::kernels::detail
