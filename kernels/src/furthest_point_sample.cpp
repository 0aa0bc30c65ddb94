// furthest_point_sample: checks, then the CPU or CUDA kernel.
#include <c10/util/Exception.h>

#include "dispatch.h"
#include "dtrain/kernels/pointnet2.h"
#include "point_checks.h"

namespace dtrain::kernels {

at::Tensor furthest_point_sample(const at::Tensor& xyz, int64_t npoint, int64_t start) {
  constexpr const char* op = "furthest_point_sample";
  detail::check_coordinates(op, "xyz", xyz);
  TORCH_CHECK(xyz.is_cpu() || xyz.is_cuda(), op, ": unsupported device ", xyz.device());
  const int64_t n = xyz.size(1);
  TORCH_CHECK(n >= 1, op, ": xyz must hold at least one point, got shape ", xyz.sizes());
  TORCH_CHECK(npoint >= 1 && npoint <= n, op, ": npoint must be in [1, N] = [1, ", n, "], got ",
              npoint);
  TORCH_CHECK(start >= 0 && start < n, op, ": start must be in [0, N) = [0, ", n, "), got ", start);
  const at::Tensor points = detail::coordinates_fp32(xyz);
  if (points.is_cuda()) {
    return detail::furthest_point_sample_cuda(points, npoint, start);
  }
  return detail::furthest_point_sample_cpu(points, npoint, start);
}

std::vector<std::string> furthest_point_sample_cuda_choices() {
  return detail::furthest_point_sample_cuda_choices();
}

}  // namespace dtrain::kernels
