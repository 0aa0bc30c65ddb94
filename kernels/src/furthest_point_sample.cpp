// furthest_point_sample: checks, then the CPU or CUDA kernel.
#include <c10/util/Exception.h>

#include "dispatch.h"
#include "dtrain/kernels/pointnet2.h"
#include "point_checks.h"

namespace dtrain::kernels {

at::Tensor furthest_point_sample(const at::Tensor& xyz, int64_t npoint, int64_t start,
                                 const FpsOptions& options) {
  const at::Tensor points =
      detail::checked_sampling_points("furthest_point_sample", xyz, npoint, start);
  if (points.is_cuda()) {
    return detail::furthest_point_sample_cuda(points, npoint, start, options.cuda_kernel());
  }
  return detail::furthest_point_sample_cpu(points, npoint, start, options.cpu_path());
}

}  // namespace dtrain::kernels
