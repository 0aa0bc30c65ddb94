// Compiled only when dtrain is built without CUDA: every CUDA entry point
// raises, saying why, instead of failing to link.
#include <c10/util/Exception.h>

#include "dispatch.h"

namespace dtrain::kernels::detail {

namespace {
[[noreturn]] void no_cuda(const char* op) {
  TORCH_CHECK(false, op, ": got CUDA tensors, but this dtrain was built without CUDA ",
              "(DTRAIN_CUDA=OFF or no nvcc at build time)");
}
}  // namespace

at::Tensor count_correct_cuda(const at::Tensor&, const at::Tensor&) {
  no_cuda("count_correct");
}

}  // namespace dtrain::kernels::detail
