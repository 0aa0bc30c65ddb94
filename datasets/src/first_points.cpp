// Cutting loaded or generated clouds down to their first points, the way
// the HDF5 readers' num_points does while reading.
#include <ATen/ATen.h>

#include "dtrain/datasets/point_clouds.h"
#include "dtrain/datasets/shapenet_part.h"
#include "dtrain/util/errors.h"

namespace dtrain::datasets {

namespace {

at::Tensor first_along_points(const at::Tensor& per_point, int64_t num_points) {
  return per_point.narrow(1, 0, num_points).contiguous();
}

void check_num_points(const char* what, const at::Tensor& points, int64_t num_points) {
  const int64_t available = points.defined() ? points.size(1) : 0;
  DTRAIN_CHECK(num_points > 0 && num_points <= available, what, ": num_points must be in [1, ",
               available, "] (the points each cloud holds), got ", num_points);
}

}  // namespace

LabeledClouds first_points(LabeledClouds clouds, int64_t num_points) {
  check_num_points("first_points(LabeledClouds)", clouds.points, num_points);
  clouds.points = first_along_points(clouds.points, num_points);
  if (clouds.normals.defined()) {
    clouds.normals = first_along_points(clouds.normals, num_points);
  }
  return clouds;
}

LabeledParts first_points(LabeledParts clouds, int64_t num_points) {
  check_num_points("first_points(LabeledParts)", clouds.points, num_points);
  clouds.points = first_along_points(clouds.points, num_points);
  clouds.parts = first_along_points(clouds.parts, num_points);
  return clouds;
}

}  // namespace dtrain::datasets
