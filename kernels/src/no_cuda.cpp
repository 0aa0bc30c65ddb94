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

namespace dtrain::kernels::detail {

at::Tensor furthest_point_sample_cuda(const at::Tensor&, int64_t, int64_t, FpsKernel) {
  no_cuda("furthest_point_sample");
}
std::tuple<at::Tensor, at::Tensor> ball_query_cuda(const at::Tensor&, const at::Tensor&, float,
                                                   int64_t) {
  no_cuda("ball_query");
}
std::tuple<at::Tensor, at::Tensor> knn_cuda(const at::Tensor&, const at::Tensor&, int64_t) {
  no_cuda("knn");
}
std::tuple<at::Tensor, at::Tensor> three_nn_cuda(const at::Tensor&, const at::Tensor&) {
  no_cuda("three_nn");
}
at::Tensor gather_points_cuda(const at::Tensor&, const at::Tensor&) {
  no_cuda("gather_points");
}
at::Tensor scatter_add_points_cuda(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t,
                                   ScatterMode) {
  no_cuda("scatter_add_points");
}
at::Tensor three_interpolate_cuda(const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  no_cuda("three_interpolate");
}
at::Tensor three_interpolate_weight_grad_cuda(const at::Tensor&, const at::Tensor&,
                                              const at::Tensor&) {
  no_cuda("three_interpolate_weight_grad");
}

}  // namespace dtrain::kernels::detail
