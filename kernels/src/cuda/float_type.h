// at::ScalarType -> the FloatType the CUDA launchers take.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include "launchers.h"

namespace dtrain::kernels::cuda {

inline FloatType float_type_of(const at::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case at::kFloat:
      return FloatType::kFloat32;
    case at::kDouble:
      return FloatType::kFloat64;
    case at::kHalf:
      return FloatType::kFloat16;
    case at::kBFloat16:
      return FloatType::kBFloat16;
    default:
      TORCH_CHECK(false, "expected a float32, float64, float16 or bfloat16 tensor, got ",
                  tensor.scalar_type());
  }
}

}  // namespace dtrain::kernels::cuda
