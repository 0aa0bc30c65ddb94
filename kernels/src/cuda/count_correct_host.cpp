// Tensors -> launch_count_correct on the current CUDA stream.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAGuard.h>

#include "../dispatch.h"
#include "float_type.h"
#include "launchers.h"

namespace dtrain::kernels::detail {

at::Tensor count_correct_cuda(const at::Tensor& logits, const at::Tensor& labels) {
  const c10::cuda::CUDAGuard device_guard(logits.device());
  at::Tensor counter = at::zeros({}, logits.options().dtype(at::kLong));
  cuda::launch_count_correct(
      cuda::float_type_of(logits), logits.const_data_ptr(), labels.const_data_ptr<int64_t>(),
      logits.size(0), logits.size(1),
      reinterpret_cast<unsigned long long*>(counter.mutable_data_ptr<int64_t>()),
      at::cuda::getCurrentCUDAStream());
  return counter;
}

}  // namespace dtrain::kernels::detail
