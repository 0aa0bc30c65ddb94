// three_interpolate: checks, the autograd Function (gradients for features
// and weight) and the explicit backward.
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>

#include "dispatch.h"
#include "dtrain/kernels/pointnet2.h"
#include "point_checks.h"
#include "point_ops.h"

namespace dtrain::kernels {

namespace {

constexpr const char* kOp = "three_interpolate";

void check_inputs(const char* op, const at::Tensor& features, const at::Tensor& idx,
                  const at::Tensor& weight) {
  detail::check_features(op, "features", features);
  detail::check_int64(op, "idx", idx);
  TORCH_CHECK(idx.dim() == 3 && idx.size(2) == 3, op, ": idx must have shape (B, n, 3), got shape ",
              idx.sizes());
  TORCH_CHECK(weight.defined() && weight.sizes() == idx.sizes(), op,
              ": weight must have the shape of idx ", idx.sizes(), ", got ",
              weight.defined() ? weight.sizes() : at::IntArrayRef{});
  detail::check_strided(op, "weight", weight);
  TORCH_CHECK(detail::is_supported_float(weight.scalar_type()), op,
              ": weight must be float32, float64, float16 or bfloat16, got ", weight.scalar_type());
  detail::check_same_device(op, "idx", idx, "features", features);
  detail::check_same_device(op, "weight", weight, "features", features);
  detail::check_batch(op, "idx", idx, "features", features);
  detail::check_index_range(op, "idx", idx, features.size(2));
}

// (B, n, 3) -> (B, 3n). flatten, not reshape({B, -1}): -1 cannot be inferred
// from a tensor of 0 elements (an empty batch, or n == 0).
at::Tensor flat(const at::Tensor& t) {
  return t.flatten(1).contiguous();
}

// The weights as the kernels take them (Note [Interpolation weights in the
// accumulation type] in dispatch.h), flattened; a differentiable cast.
at::Tensor flat_weight(const at::Tensor& weight, const at::Tensor& features) {
  return flat(weight.to(detail::weight_dtype(features)));
}

at::Tensor interpolate_flat(const at::Tensor& features, const at::Tensor& idx_flat,
                            const at::Tensor& weight_flat) {
  return features.is_cuda() ? detail::three_interpolate_cuda(features, idx_flat, weight_flat)
                            : detail::three_interpolate_cpu(features, idx_flat, weight_flat);
}

// Gradients w.r.t. features (B, C, m) and weight (B, 3n), either skipped
// when not needed.
struct FlatGrads {
  at::Tensor features;
  at::Tensor weight;
};

FlatGrads interpolate_backward_flat(const at::Tensor& grad_out, const at::Tensor& features,
                                    const at::Tensor& idx_flat, const at::Tensor& weight_flat,
                                    ScatterMode mode, bool need_features, bool need_weight) {
  FlatGrads grads;
  const bool cuda = grad_out.is_cuda();
  if (need_features) {
    const int64_t m = features.size(2);
    grads.features = cuda
                         ? detail::scatter_add_points_cuda(grad_out, idx_flat, weight_flat, m, mode)
                         : detail::scatter_add_points_cpu(grad_out, idx_flat, weight_flat, m, mode);
  }
  if (need_weight) {
    grads.weight = cuda ? detail::three_interpolate_weight_grad_cuda(grad_out, features, idx_flat)
                        : detail::three_interpolate_weight_grad_cpu(grad_out, features, idx_flat);
  }
  return grads;
}

class ThreeInterpolateFunction : public torch::autograd::Function<ThreeInterpolateFunction> {
 public:
  // features (B, C, m), idx_flat and weight_flat (B, 3n), contiguous; weight_flat
  // in weight_dtype(features).
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& features,
                            const at::Tensor& idx_flat, const at::Tensor& weight_flat) {
    ctx->save_for_backward({features, idx_flat, weight_flat});
    return interpolate_flat(features, idx_flat, weight_flat);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const FlatGrads g = interpolate_backward_flat(
        grads[0].contiguous(), saved[0], saved[1], saved[2], backward_scatter_mode(),
        ctx->needs_input_grad(0), ctx->needs_input_grad(2));
    return {g.features, at::Tensor(), g.weight};
  }
};

}  // namespace

namespace detail {

at::Tensor three_interpolate_forward(const at::Tensor& features, const at::Tensor& idx,
                                     const at::Tensor& weight) {
  check_inputs(kOp, features, idx, weight);
  return interpolate_flat(features.contiguous(), flat(idx), flat_weight(weight, features));
}

}  // namespace detail

at::Tensor three_interpolate(const at::Tensor& features, const at::Tensor& idx,
                             const at::Tensor& weight) {
  check_inputs(kOp, features, idx, weight);
  return ThreeInterpolateFunction::apply(features.contiguous(), flat(idx),
                                         flat_weight(weight, features));
}

ThreeInterpolateGrads three_interpolate_backward(const at::Tensor& grad_out,
                                                 const at::Tensor& features, const at::Tensor& idx,
                                                 const at::Tensor& weight, ScatterMode mode) {
  constexpr const char* op = "three_interpolate_backward";
  check_inputs(op, features, idx, weight);
  TORCH_CHECK(grad_out.defined() && grad_out.dim() == 3 && grad_out.size(0) == features.size(0) &&
                  grad_out.size(1) == features.size(1) && grad_out.size(2) == idx.size(1),
              op, ": grad_out must have shape (", features.size(0), ", ", features.size(1), ", ",
              idx.size(1), "), got ", grad_out.defined() ? grad_out.sizes() : at::IntArrayRef{});
  detail::check_strided(op, "grad_out", grad_out);
  TORCH_CHECK(grad_out.scalar_type() == features.scalar_type(), op, ": grad_out must have ",
              "features' dtype ", features.scalar_type(), ", got ", grad_out.scalar_type());
  detail::check_same_device(op, "grad_out", grad_out, "features", features);
  const FlatGrads g =
      interpolate_backward_flat(grad_out.contiguous(), features.contiguous(), flat(idx),
                                flat_weight(weight, features), mode, true, true);
  return {g.features, g.weight.view(idx.sizes()).to(weight.scalar_type())};
}

}  // namespace dtrain::kernels
