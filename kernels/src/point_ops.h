// Internal: the PointNet++ feature ops without autograd (checks + device
// dispatch only). The public functions wrap these in autograd Functions;
// register_ops.cpp registers them for the CPU and CUDA dispatch keys.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace dtrain::kernels::detail {

at::Tensor gather_points_forward(const at::Tensor& features, const at::Tensor& idx);
at::Tensor group_points_forward(const at::Tensor& features, const at::Tensor& idx);
at::Tensor three_interpolate_forward(const at::Tensor& features, const at::Tensor& idx,
                                     const at::Tensor& weight);

}  // namespace dtrain::kernels::detail
