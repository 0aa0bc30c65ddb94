// The PointNet++ ops as torch custom ops (namespace `dtrain`), so Python can
// call them after torch.ops.load_library("libdtrain_kernels.so"):
//
//   torch.ops.dtrain.furthest_point_sample(xyz, 512)
//   idx, count = torch.ops.dtrain.ball_query(new_xyz, xyz, 0.2, 32)
//   y = torch.ops.dtrain.batch_norm_relu(x, bn.weight, bn.bias, bn.running_mean,
//                                        bn.running_var, 0.1, 1e-5)
//
// CPU and CUDA kernels check their inputs and run without autograd; the
// Autograd kernels of the differentiable ops (gather_points, group_points,
// three_interpolate) are the public C++ functions, whose autograd Functions
// call the device kernels directly.
//
// Note [The PointNet++ ops under autocast]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Each op says what it does under torch.autocast (AutocastCPU and
// AutocastCUDA), as torch's own ops do:
//  - coordinate ops (furthest_point_sample, ball_query, knn, three_nn) run
//    in float32: their float16/bfloat16 coordinates are cast first, as
//    autocast's float32 ops do, and below autocast the kernels compute in
//    float32 anyway, so their indices equal those of a float32 call;
//  - feature ops (gather_points, group_points, three_interpolate,
//    batch_norm_relu, neighbour_max) fall through: they run in the dtype
//    their features arrive in (a bfloat16 convolution's output stays
//    bfloat16) with float32 accumulation, and three_interpolate keeps
//    float32 weights as they are (Note [Interpolation weights in the
//    accumulation type] in dispatch.h).
// The public C++ functions do the same without the dispatcher.
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

#include "dtrain/kernels/batch_norm_relu.h"
#include "dtrain/kernels/neighbour_max.h"
#include "dtrain/kernels/pointnet2.h"
#include "point_ops.h"

namespace dtrain::kernels {

namespace {

at::Tensor furthest_point_sample_op(const at::Tensor& xyz, int64_t npoint, int64_t start) {
  return furthest_point_sample(xyz, npoint, start);
}

std::tuple<at::Tensor, at::Tensor> ball_query_op(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                                 double radius, int64_t nsample) {
  BallQueryResult result = ball_query(new_xyz, xyz, radius, nsample);
  return {result.idx, result.count};
}

std::tuple<at::Tensor, at::Tensor> knn_op(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                          int64_t k) {
  KnnResult result = knn(new_xyz, xyz, k);
  return {result.idx, result.dist2};
}

std::tuple<at::Tensor, at::Tensor> three_nn_op(const at::Tensor& unknown, const at::Tensor& known) {
  ThreeNnResult result = three_nn(unknown, known);
  return {result.dist2, result.idx};
}

// The fused batch norm + ReLU (and neighbour_max) run through their own
// autograd Functions on either key; the running statistics may be None.
at::Tensor batch_norm_relu_op(const at::Tensor& input, const at::Tensor& weight,
                              const at::Tensor& bias, const std::optional<at::Tensor>& running_mean,
                              const std::optional<at::Tensor>& running_var, double momentum,
                              double eps) {
  return batch_norm_relu(input, weight, bias, running_mean.value_or(at::Tensor()),
                         running_var.value_or(at::Tensor()), momentum, eps);
}

// The autocast kernels of the coordinate ops on device type `kDevice`: cast
// the coordinates to float32 and call the op again below autocast.
template <c10::DeviceType kDevice>
struct Float32UnderAutocast {
  static at::Tensor fp32(const at::Tensor& coordinates) {
    return at::autocast::cached_cast(at::kFloat, coordinates, kDevice);
  }

  template <typename Signature>
  static c10::TypedOperatorHandle<Signature> op(const char* name) {
    return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
  }

  static at::Tensor furthest_point_sample(const at::Tensor& xyz, int64_t npoint, int64_t start) {
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    static const auto fps =
        op<at::Tensor(const at::Tensor&, int64_t, int64_t)>("dtrain::furthest_point_sample");
    return fps.call(fp32(xyz), npoint, start);
  }

  static std::tuple<at::Tensor, at::Tensor> ball_query(const at::Tensor& new_xyz,
                                                       const at::Tensor& xyz, double radius,
                                                       int64_t nsample) {
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    static const auto query = op<std::tuple<at::Tensor, at::Tensor>(
        const at::Tensor&, const at::Tensor&, double, int64_t)>("dtrain::ball_query");
    return query.call(fp32(new_xyz), fp32(xyz), radius, nsample);
  }

  static std::tuple<at::Tensor, at::Tensor> knn(const at::Tensor& new_xyz, const at::Tensor& xyz,
                                                int64_t k) {
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    static const auto nearest =
        op<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, int64_t)>(
            "dtrain::knn");
    return nearest.call(fp32(new_xyz), fp32(xyz), k);
  }

  static std::tuple<at::Tensor, at::Tensor> three_nn(const at::Tensor& unknown,
                                                     const at::Tensor& known) {
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    static const auto nearest =
        op<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&)>(
            "dtrain::three_nn");
    return nearest.call(fp32(unknown), fp32(known));
  }
};

// Note [The PointNet++ ops under autocast], on one autocast key.
template <c10::DeviceType kDevice>
void register_autocast(torch::Library& m) {
  using Coordinates = Float32UnderAutocast<kDevice>;
  m.impl("furthest_point_sample", Coordinates::furthest_point_sample);
  m.impl("ball_query", Coordinates::ball_query);
  m.impl("knn", Coordinates::knn);
  m.impl("three_nn", Coordinates::three_nn);
  for (const char* features_op :
       {"gather_points", "group_points", "three_interpolate", "batch_norm_relu", "neighbour_max"}) {
    m.impl(features_op, torch::CppFunction::makeFallthrough());
  }
}

}  // namespace

TORCH_LIBRARY(dtrain, m) {
  m.def("furthest_point_sample(Tensor xyz, int npoint, int start=0) -> Tensor");
  m.def("gather_points(Tensor features, Tensor idx) -> Tensor");
  m.def("ball_query(Tensor new_xyz, Tensor xyz, float radius, int nsample) -> (Tensor, Tensor)");
  m.def("knn(Tensor new_xyz, Tensor xyz, int k) -> (Tensor, Tensor)");
  m.def("group_points(Tensor features, Tensor idx) -> Tensor");
  m.def("three_nn(Tensor unknown, Tensor known) -> (Tensor, Tensor)");
  m.def("three_interpolate(Tensor features, Tensor idx, Tensor weight) -> Tensor");
  m.def(
      "batch_norm_relu(Tensor input, Tensor weight, Tensor bias, Tensor(a!)? running_mean, "
      "Tensor(b!)? running_var, float momentum, float eps) -> Tensor");
  m.def("neighbour_max(Tensor grouped) -> Tensor");
}

TORCH_LIBRARY_IMPL(dtrain, CPU, m) {
  m.impl("furthest_point_sample", furthest_point_sample_op);
  m.impl("gather_points", detail::gather_points_forward);
  m.impl("ball_query", ball_query_op);
  m.impl("knn", knn_op);
  m.impl("group_points", detail::group_points_forward);
  m.impl("three_nn", three_nn_op);
  m.impl("three_interpolate", detail::three_interpolate_forward);
  m.impl("batch_norm_relu", batch_norm_relu_op);
  m.impl("neighbour_max", neighbour_max);
}

TORCH_LIBRARY_IMPL(dtrain, CUDA, m) {
  m.impl("furthest_point_sample", furthest_point_sample_op);
  m.impl("gather_points", detail::gather_points_forward);
  m.impl("ball_query", ball_query_op);
  m.impl("knn", knn_op);
  m.impl("group_points", detail::group_points_forward);
  m.impl("three_nn", three_nn_op);
  m.impl("three_interpolate", detail::three_interpolate_forward);
}

TORCH_LIBRARY_IMPL(dtrain, Autograd, m) {
  m.impl("gather_points", gather_points);
  m.impl("group_points", group_points);
  m.impl("three_interpolate", three_interpolate);
  m.impl("batch_norm_relu", batch_norm_relu_op);
  m.impl("neighbour_max", neighbour_max);
}

TORCH_LIBRARY_IMPL(dtrain, AutocastCPU, m) {
  register_autocast<c10::DeviceType::CPU>(m);
}

TORCH_LIBRARY_IMPL(dtrain, AutocastCUDA, m) {
  register_autocast<c10::DeviceType::CUDA>(m);
}

}  // namespace dtrain::kernels
