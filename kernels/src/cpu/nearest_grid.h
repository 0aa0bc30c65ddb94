// Internal: the k nearest points of a query through a uniform grid over the
// points (Note [Nearest points through a grid]), for kNN and three-NN on
// clouds large enough to repay building it. Same answer as scanning every
// point: the first k points by (squared distance, index).
#pragma once

#include <cstdint>
#include <vector>

namespace dtrain::kernels::detail {

class NearestGrid {
 public:
  // The n points of one batch element as planes x[], y[], z[], every
  // coordinate finite (grid_suits checks), in cells of about
  // points_per_cell points.
  NearestGrid(const float* x, const float* y, const float* z, int64_t n, int64_t points_per_cell);

  // Whether the grid's answer can be trusted for these points: all finite.
  static bool grid_suits(const float* x, const float* y, const float* z, int64_t n);

  // The k (<= n) nearest points of (qx, qy, qz) (a finite query), ascending
  // by (distance, index), into dist[k] and idx[k].
  void nearest(float qx, float qy, float qz, int64_t k, float* dist, int64_t* idx) const;

 private:
  int64_t cell_of(int axis, float coordinate) const;

  float low_[3];
  float size_;                  // edge of a cubic cell
  int64_t cells_[3];            // per axis
  std::vector<int64_t> start_;  // cell (x-major) -> first sorted position; one past the end last
  std::vector<float> x_, y_, z_;
  std::vector<int64_t> index_;  // sorted position -> point index
};

}  // namespace dtrain::kernels::detail
