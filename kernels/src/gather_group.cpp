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

// Note [point-major features] in dispatch.h: CPU features whose channels
// are innermost. (A tensor contiguous both ways, C or N of 1, takes the
// channel-major path.)
bool is_point_major(const at::Tensor& features) {
  return !features.is_cuda() && !features.is_contiguous() &&
         features.transpose(1, 2).is_contiguous();
}

// features (B, C, N) in any layout, idx_flat (B, L) contiguous -> (B, C, L):
// contiguous, or point-major (the transpose of a contiguous (B, L, C)) from
// point-major features.
at::Tensor gather_any_layout(const at::Tensor& features, const at::Tensor& idx_flat) {
  if (is_point_major(features)) {
    return detail::gather_rows_cpu(features.transpose(1, 2), idx_flat).transpose(1, 2);
  }
  return gather_flat(features.contiguous(), idx_flat);
}

// (B, C, L) -> (B, C, M, K), keeping the layout: point-major becomes channels-last.
at::Tensor as_groups(const at::Tensor& gathered, const at::Tensor& idx) {
  return gathered.view({gathered.size(0), gathered.size(1), idx.size(1), idx.size(2)});
}

class GatherFunction : public torch::autograd::Function<GatherFunction> {
 public:
  // features (B, C, N), idx_flat (B, L) contiguous -> (B, C, L), see gather_any_layout.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& features,
                            const at::Tensor& idx_flat) {
    ctx->save_for_backward({idx_flat});
    ctx->saved_data["n"] = features.size(2);
    ctx->saved_data["point_major"] = is_point_major(features);
    return gather_any_layout(features, idx_flat);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const at::Tensor idx_flat = ctx->get_saved_variables()[0];
    const int64_t n = ctx->saved_data["n"].toInt();
    if (ctx->saved_data["point_major"].toBool()) {
      // The gradient of a point-major result is most often point-major too
      // (channels-last, or a channel slice of it): its rows are read where
      // they lie, and the features' gradient comes back point-major.
      at::Tensor rows = grads[0].flatten(2).transpose(1, 2);  // (B, L, C)
      if (rows.size(2) > 1 && rows.stride(2) != 1) {
        rows = rows.contiguous();
      }
      return {detail::scatter_add_rows_cpu(rows, idx_flat, n).transpose(1, 2), at::Tensor()};
    }
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
  return gather_any_layout(features, idx.contiguous());
}

at::Tensor group_points_forward(const at::Tensor& features, const at::Tensor& idx) {
  check_gather_inputs("group_points", features, idx, 3, "(B, M, K)");
  return as_groups(gather_any_layout(features, flat_idx(idx)), idx);
}

}  // namespace detail

at::Tensor gather_points(const at::Tensor& features, const at::Tensor& idx) {
  check_gather_inputs("gather_points", features, idx, 2, "(B, M)");
  return GatherFunction::apply(features, idx.contiguous());
}

at::Tensor group_points(const at::Tensor& features, const at::Tensor& idx) {
  check_gather_inputs("group_points", features, idx, 3, "(B, M, K)");
  return as_groups(GatherFunction::apply(features, flat_idx(idx)), idx);
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
