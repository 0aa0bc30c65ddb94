// gather_points and group_points (one gather over flattened indices), their
// backward passes and autograd Function, and the backward scatter mode.
#include <ATen/Context.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>

#include <atomic>

#include "dispatch.h"
#include "dtrain/kernels/pointnet2.h"
#include "point_checks.h"
#include "point_ops.h"

namespace dtrain::kernels {

namespace {

std::atomic<bool> g_deterministic_backward{false};

// features (B, C, N) and idx (B, ...) int64 on one device, indices in [0, N).
void check_gather_inputs(const char* op, const at::Tensor& features, const at::Tensor& idx,
                         int64_t idx_dims, const char* idx_shape) {
  detail::check_features(op, "features", features);
  detail::check_int64(op, "idx", idx);
  TORCH_CHECK(idx.dim() == idx_dims, op, ": idx must have shape ", idx_shape, ", got shape ",
              idx.sizes());
  detail::check_same_device(op, "idx", idx, "features", features);
  detail::check_batch(op, "idx", idx, "features", features);
  detail::check_index_range(op, "idx", idx, features.size(2));
}

// idx (B, ...) as (B, L), L the product of its trailing sizes. flatten, not
// reshape({B, -1}): -1 cannot be inferred from a tensor of 0 elements, and
// an empty batch (or M or K == 0) must give an empty result, not an error.
at::Tensor flat_idx(const at::Tensor& idx) {
  return idx.flatten(1).contiguous();
}

// Gathers along the last axis with idx flattened to (B, L): the backward
// scatters into a (B, C, N) gradient. Note [scatter layout] in dispatch.h.
at::Tensor gather_flat(const at::Tensor& features, const at::Tensor& idx_flat) {
  return features.is_cuda() ? detail::gather_points_cuda(features, idx_flat)
                            : detail::gather_points_cpu(features, idx_flat);
}

at::Tensor scatter_flat(const at::Tensor& grad_out, const at::Tensor& idx_flat,
                        const at::Tensor& weight, int64_t n, ScatterMode mode) {
  return grad_out.is_cuda() ? detail::scatter_add_points_cuda(grad_out, idx_flat, weight, n, mode)
                            : detail::scatter_add_points_cpu(grad_out, idx_flat, weight, n, mode);
}

class GatherFunction : public torch::autograd::Function<GatherFunction> {
 public:
  // features (B, C, N) contiguous, idx_flat (B, L) contiguous -> (B, C, L).
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& features,
                            const at::Tensor& idx_flat) {
    ctx->save_for_backward({idx_flat});
    ctx->saved_data["n"] = features.size(2);
    return gather_flat(features, idx_flat);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const at::Tensor idx_flat = ctx->get_saved_variables()[0];
    const int64_t n = ctx->saved_data["n"].toInt();
    at::Tensor grad_features =
        scatter_flat(grads[0].contiguous(), idx_flat, at::Tensor(), n, backward_scatter_mode());
    return {grad_features, at::Tensor()};
  }
};

}  // namespace

void set_deterministic_backward(bool deterministic) {
  g_deterministic_backward.store(deterministic);
}

ScatterMode backward_scatter_mode() {
  return g_deterministic_backward.load() || at::globalContext().deterministicAlgorithms()
             ? ScatterMode::kDeterministic
             : ScatterMode::kAtomic;
}

namespace detail {

at::Tensor gather_points_forward(const at::Tensor& features, const at::Tensor& idx) {
  check_gather_inputs("gather_points", features, idx, 2, "(B, M)");
  return gather_flat(features.contiguous(), idx.contiguous());
}

at::Tensor group_points_forward(const at::Tensor& features, const at::Tensor& idx) {
  check_gather_inputs("group_points", features, idx, 3, "(B, M, K)");
  const at::Tensor out = gather_flat(features.contiguous(), flat_idx(idx));
  return out.view({features.size(0), features.size(1), idx.size(1), idx.size(2)});
}

}  // namespace detail

at::Tensor gather_points(const at::Tensor& features, const at::Tensor& idx) {
  check_gather_inputs("gather_points", features, idx, 2, "(B, M)");
  return GatherFunction::apply(features.contiguous(), idx.contiguous());
}

at::Tensor group_points(const at::Tensor& features, const at::Tensor& idx) {
  check_gather_inputs("group_points", features, idx, 3, "(B, M, K)");
  const at::Tensor out = GatherFunction::apply(features.contiguous(), flat_idx(idx));
  return out.view({features.size(0), features.size(1), idx.size(1), idx.size(2)});
}

namespace {

// grad_out (B, C, <idx's trailing dims>) and idx of rank idx_dims.
at::Tensor checked_backward(const char* op, const at::Tensor& grad_out, const at::Tensor& idx,
                            int64_t n, ScatterMode mode, int64_t idx_dims, const char* shapes) {
  TORCH_CHECK(grad_out.defined() && grad_out.dim() == idx_dims + 1, op, ": grad_out must have ",
              "shape ", shapes, ", got ",
              grad_out.defined() ? grad_out.sizes() : at::IntArrayRef{});
  detail::check_strided(op, "grad_out", grad_out);
  TORCH_CHECK(detail::is_supported_float(grad_out.scalar_type()), op,
              ": grad_out must be float32, float64, float16 or bfloat16, got ",
              grad_out.scalar_type());
  detail::check_int64(op, "idx", idx);
  TORCH_CHECK(idx.dim() == idx_dims && idx.size(0) == grad_out.size(0) &&
                  idx.sizes().slice(1) == grad_out.sizes().slice(2),
              op, ": idx must have shape ", shapes, " matching grad_out of shape ",
              grad_out.sizes(), ", got ", idx.sizes());
  detail::check_same_device(op, "idx", idx, "grad_out", grad_out);
  TORCH_CHECK(n >= 0, op, ": n must be >= 0, got ", n);
  detail::check_index_range(op, "idx", idx, n);
  // (B, C, L), flattened like idx (see flat_idx: also for zero sizes).
  const at::Tensor grad_flat = grad_out.flatten(2).contiguous();
  return scatter_flat(grad_flat, flat_idx(idx), at::Tensor(), n, mode);
}

}  // namespace

at::Tensor gather_points_backward(const at::Tensor& grad_out, const at::Tensor& idx, int64_t n,
                                  ScatterMode mode) {
  return checked_backward("gather_points_backward", grad_out, idx, n, mode, 2,
                          "(B, C, M) and (B, M)");
}

at::Tensor group_points_backward(const at::Tensor& grad_out, const at::Tensor& idx, int64_t n,
                                 ScatterMode mode) {
  return checked_backward("group_points_backward", grad_out, idx, n, mode, 3,
                          "(B, C, M, K) and (B, M, K)");
}

}  // namespace dtrain::kernels
