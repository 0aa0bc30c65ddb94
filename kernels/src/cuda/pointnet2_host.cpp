// Tensors -> the PointNet++ launchers, on the current CUDA stream.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAGuard.h>

#include <tuple>

#include "../dispatch.h"
#include "float_type.h"
#include "launchers.h"

namespace dtrain::kernels::detail {

namespace {

cudaStream_t current_stream() {
  return at::cuda::getCurrentCUDAStream();
}

at::TensorOptions long_options(const at::Tensor& like) {
  return like.options().dtype(at::kLong);
}

cuda::FpsKernel cuda_fps_kernel(FpsKernel kernel) {
  switch (kernel) {
    case FpsKernel::kRegisters:
      return cuda::FpsKernel::kRegisters;
    case FpsKernel::kChunks:
      return cuda::FpsKernel::kChunks;
    case FpsKernel::kOneBlockShared:
      return cuda::FpsKernel::kOneBlockShared;
    case FpsKernel::kOneBlockGlobal:
      return cuda::FpsKernel::kOneBlockGlobal;
    case FpsKernel::kAuto:
      return cuda::FpsKernel::kAuto;
  }
  TORCH_CHECK(false, "furthest_point_sample: unknown FpsKernel ", static_cast<int>(kernel));
}

}  // namespace

at::Tensor furthest_point_sample_cuda(const at::Tensor& xyz, int64_t npoint, int64_t start,
                                      FpsKernel kernel) {
  const c10::cuda::CUDAGuard device_guard(xyz.device());
  const int64_t batch = xyz.size(0);
  const int64_t n = xyz.size(1);
  at::Tensor out = at::empty({batch, npoint}, long_options(xyz));
  const cuda::FpsPlan plan = cuda::plan_furthest_point_sample(cuda_fps_kernel(kernel), batch, n);
  at::Tensor scratch =
      at::empty({static_cast<int64_t>(plan.scratch_bytes)}, xyz.options().dtype(at::kByte));
  cuda::launch_furthest_point_sample(plan, xyz.const_data_ptr<float>(), batch, n, npoint, start,
                                     scratch.mutable_data_ptr(), out.mutable_data_ptr<int64_t>(),
                                     current_stream());
  return out;
}

std::tuple<at::Tensor, at::Tensor> ball_query_cuda(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                                   float radius2, int64_t nsample) {
  const c10::cuda::CUDAGuard device_guard(new_xyz.device());
  const int64_t batch = new_xyz.size(0);
  const int64_t m = new_xyz.size(1);
  at::Tensor idx = at::empty({batch, m, nsample}, long_options(new_xyz));
  at::Tensor count = at::empty({batch, m}, long_options(new_xyz));
  cuda::launch_ball_query(new_xyz.const_data_ptr<float>(), xyz.const_data_ptr<float>(), batch, m,
                          xyz.size(1), radius2, nsample, idx.mutable_data_ptr<int64_t>(),
                          count.mutable_data_ptr<int64_t>(), current_stream());
  return {idx, count};
}

std::tuple<at::Tensor, at::Tensor> knn_cuda(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                            int64_t k) {
  const c10::cuda::CUDAGuard device_guard(new_xyz.device());
  const int64_t batch = new_xyz.size(0);
  const int64_t m = new_xyz.size(1);
  at::Tensor idx = at::empty({batch, m, k}, long_options(new_xyz));
  at::Tensor dist2 = at::empty({batch, m, k}, new_xyz.options().dtype(at::kFloat));
  cuda::launch_knn(new_xyz.const_data_ptr<float>(), xyz.const_data_ptr<float>(), batch, m,
                   xyz.size(1), k, idx.mutable_data_ptr<int64_t>(), dist2.mutable_data_ptr<float>(),
                   current_stream());
  return {idx, dist2};
}

std::tuple<at::Tensor, at::Tensor> three_nn_cuda(const at::Tensor& unknown,
                                                 const at::Tensor& known) {
  const c10::cuda::CUDAGuard device_guard(unknown.device());
  const int64_t batch = unknown.size(0);
  const int64_t n = unknown.size(1);
  at::Tensor idx = at::empty({batch, n, 3}, long_options(unknown));
  at::Tensor dist2 = at::empty({batch, n, 3}, unknown.options().dtype(at::kFloat));
  cuda::launch_three_nn(unknown.const_data_ptr<float>(), known.const_data_ptr<float>(), batch, n,
                        known.size(1), dist2.mutable_data_ptr<float>(),
                        idx.mutable_data_ptr<int64_t>(), current_stream());
  return {dist2, idx};
}

at::Tensor gather_points_cuda(const at::Tensor& features, const at::Tensor& idx) {
  const c10::cuda::CUDAGuard device_guard(features.device());
  at::Tensor out = at::empty({features.size(0), features.size(1), idx.size(1)}, features.options());
  cuda::launch_gather_points(cuda::float_type_of(features), features.const_data_ptr(),
                             idx.const_data_ptr<int64_t>(), features.size(0), features.size(1),
                             features.size(2), idx.size(1), out.mutable_data_ptr(),
                             current_stream());
  return out;
}

at::Tensor scatter_add_points_cuda(const at::Tensor& grad_out, const at::Tensor& idx,
                                   const at::Tensor& weight, int64_t n, ScatterMode mode) {
  const c10::cuda::CUDAGuard device_guard(grad_out.device());
  const int64_t batch = grad_out.size(0);
  const int64_t channels = grad_out.size(1);
  const int64_t l = idx.size(1);
  const bool deterministic = mode == ScatterMode::kDeterministic;
  // float16/bfloat16 accumulate in float32 and are rounded once at the end.
  const auto acc_options = grad_out.options().dtype(weight_dtype(grad_out));
  at::Tensor acc = deterministic ? at::empty({batch, channels, n}, acc_options)
                                 : at::zeros({batch, channels, n}, acc_options);
  at::Tensor scratch;
  size_t scratch_bytes = 0;
  if (deterministic) {
    scratch_bytes = cuda::scatter_add_points_scratch_bytes(batch, l, n);
    scratch = at::empty({static_cast<int64_t>(scratch_bytes)}, grad_out.options().dtype(at::kByte));
  }
  cuda::launch_scatter_add_points(
      cuda::float_type_of(grad_out), grad_out.const_data_ptr(), idx.const_data_ptr<int64_t>(),
      weight.defined() ? weight.const_data_ptr() : nullptr, batch, channels, grad_out.size(2), l, n,
      acc.mutable_data_ptr(), deterministic, deterministic ? scratch.mutable_data_ptr() : nullptr,
      scratch_bytes, current_stream());
  return acc.scalar_type() == grad_out.scalar_type() ? acc : acc.to(grad_out.scalar_type());
}

at::Tensor three_interpolate_cuda(const at::Tensor& features, const at::Tensor& idx,
                                  const at::Tensor& weight) {
  const c10::cuda::CUDAGuard device_guard(features.device());
  const int64_t n = idx.size(1) / 3;
  at::Tensor out = at::empty({features.size(0), features.size(1), n}, features.options());
  cuda::launch_three_interpolate(cuda::float_type_of(features), features.const_data_ptr(),
                                 idx.const_data_ptr<int64_t>(), weight.const_data_ptr(),
                                 features.size(0), features.size(1), features.size(2), n,
                                 out.mutable_data_ptr(), current_stream());
  return out;
}

at::Tensor three_interpolate_weight_grad_cuda(const at::Tensor& grad_out,
                                              const at::Tensor& features, const at::Tensor& idx) {
  const c10::cuda::CUDAGuard device_guard(features.device());
  at::Tensor grad =
      at::empty({features.size(0), idx.size(1)}, features.options().dtype(weight_dtype(features)));
  cuda::launch_three_interpolate_weight_grad(
      cuda::float_type_of(features), grad_out.const_data_ptr(), features.const_data_ptr(),
      idx.const_data_ptr<int64_t>(), features.size(0), features.size(1), features.size(2),
      idx.size(1) / 3, grad.mutable_data_ptr(), current_stream());
  return grad;
}

}  // namespace dtrain::kernels::detail
