// ball_query, knn, three_nn: checks, then the CPU or CUDA kernel.
#include <c10/util/Exception.h>

#include <cmath>
#include <tuple>

#include "dispatch.h"
#include "dtrain/kernels/pointnet2.h"
#include "point_checks.h"

namespace dtrain::kernels {

namespace {

// Queries against points: both (B, *, 3), same batch and device.
void check_query_pair(const char* op, const char* query_name, const at::Tensor& query,
                      const char* points_name, const at::Tensor& points) {
  detail::check_coordinates(op, query_name, query);
  detail::check_coordinates(op, points_name, points);
  detail::check_same_device(op, query_name, query, points_name, points);
  detail::check_batch(op, query_name, query, points_name, points);
}

// radius^2 in float32, as the kernels compare it. A radius whose float32
// square underflows to 0 would find nothing, not even a centre taken from
// the cloud (d < 0 never holds); one whose square overflows to inf would
// take every finite point. Neither is a ball.
float radius_squared(const char* op, double radius) {
  const float r = static_cast<float>(radius);
  const float radius2 = r * r;
  TORCH_CHECK(radius2 > 0 && std::isfinite(radius2), op, ": radius ", radius,
              " squared in float32 is ", radius2,
              "; expected a positive, finite float32 square (radius between about 2.7e-23 "
              "and 1.8e19)");
  return radius2;
}

}  // namespace

BallQueryResult ball_query(const at::Tensor& new_xyz, const at::Tensor& xyz, double radius,
                           int64_t nsample) {
  constexpr const char* op = "ball_query";
  check_query_pair(op, "new_xyz", new_xyz, "xyz", xyz);
  TORCH_CHECK(std::isfinite(radius) && radius > 0, op, ": radius must be a finite value > 0, got ",
              radius);
  TORCH_CHECK(nsample >= 1, op, ": nsample must be >= 1, got ", nsample);
  const float radius2 = radius_squared(op, radius);
  const at::Tensor queries = detail::coordinates_fp32(new_xyz);
  const at::Tensor points = detail::coordinates_fp32(xyz);
  auto [idx, count] = queries.is_cuda() ? detail::ball_query_cuda(queries, points, radius2, nsample)
                                        : detail::ball_query_cpu(queries, points, radius2, nsample);
  return {idx, count};
}

KnnResult knn(const at::Tensor& new_xyz, const at::Tensor& xyz, int64_t k) {
  constexpr const char* op = "knn";
  check_query_pair(op, "new_xyz", new_xyz, "xyz", xyz);
  TORCH_CHECK(k >= 1 && k <= xyz.size(1), op, ": k must be in [1, N] = [1, ", xyz.size(1),
              "] (N from xyz of shape ", xyz.sizes(), "), got ", k);
  const at::Tensor queries = detail::coordinates_fp32(new_xyz);
  const at::Tensor points = detail::coordinates_fp32(xyz);
  auto [idx, dist2] = queries.is_cuda() ? detail::knn_cuda(queries, points, k)
                                        : detail::knn_cpu(queries, points, k);
  return {idx, dist2};
}

ThreeNnResult three_nn(const at::Tensor& unknown, const at::Tensor& known) {
  constexpr const char* op = "three_nn";
  check_query_pair(op, "unknown", unknown, "known", known);
  TORCH_CHECK(known.size(1) >= 3, op, ": known must hold at least 3 points, got shape ",
              known.sizes());
  const at::Tensor queries = detail::coordinates_fp32(unknown);
  const at::Tensor points = detail::coordinates_fp32(known);
  auto [dist2, idx] = queries.is_cuda() ? detail::three_nn_cuda(queries, points)
                                        : detail::three_nn_cpu(queries, points);
  return {dist2, idx};
}

}  // namespace dtrain::kernels
