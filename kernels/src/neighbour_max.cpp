// neighbour_max: input checks and the autograd Function over the CPU
// passes in src/cpu/neighbour_max.cpp.
#include "dtrain/kernels/neighbour_max.h"

#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>

#include <limits>
#include <string>

#include "dispatch.h"

namespace dtrain::kernels {

namespace {

constexpr const char* kOp = "neighbour_max";

// (B, C, M, K) channels-last as its (B, M, K, C) rows, and back.
at::Tensor as_rows(const at::Tensor& grouped) {
  return grouped.permute({0, 2, 3, 1});
}

class NeighbourMaxFunction : public torch::autograd::Function<NeighbourMaxFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& grouped) {
    detail::NeighbourMax result = detail::neighbour_max_cpu(as_rows(grouped));
    ctx->save_for_backward({result.argmax});
    ctx->saved_data["neighbours"] = grouped.size(3);
    return result.values.transpose(1, 2);  // (B, C, M), channels innermost
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const at::Tensor argmax = ctx->get_saved_variables()[0];
    const at::Tensor grad = grad_outputs[0].transpose(1, 2).contiguous();  // (B, M, C)
    const at::Tensor grad_rows =
        detail::neighbour_max_backward_cpu(grad, argmax, ctx->saved_data["neighbours"].toInt());
    return {grad_rows.permute({0, 3, 1, 2})};  // (B, C, M, K) channels-last
  }
};

// Why neighbour_max refuses `grouped`, or "" when it takes it: one list of
// rules for neighbour_max_supports() and the op's own error.
std::string refusal(const at::Tensor& grouped) {
  if (!grouped.defined()) {
    return "grouped is an undefined tensor";
  }
  if (grouped.layout() != at::kStrided) {
    return c10::str("grouped must be a strided (dense) tensor, got ", grouped.layout());
  }
  if (grouped.dim() != 4) {
    return c10::str("grouped must have shape (B, C, M, K), got shape ", grouped.sizes());
  }
  if (!grouped.device().is_cpu()) {
    return c10::str("runs on the CPU only, got grouped on ", grouped.device());
  }
  if (grouped.scalar_type() != at::kFloat && grouped.scalar_type() != at::kDouble &&
      grouped.scalar_type() != at::kBFloat16) {
    return c10::str("grouped must be float32, float64 or bfloat16, got ", grouped.scalar_type());
  }
  if (grouped.size(3) < 1) {
    return c10::str("grouped must have at least one neighbour (K >= 1), got shape ",
                    grouped.sizes());
  }
  if (grouped.size(3) > std::numeric_limits<int32_t>::max()) {
    return c10::str("K must fit in int32, got ", grouped.size(3));
  }
  if (!as_rows(grouped).is_contiguous()) {
    return c10::str(
        "grouped must be channels-last (grouped.permute({0, 2, 3, 1}) contiguous), got strides ",
        grouped.strides(), " for shape ", grouped.sizes());
  }
  return "";
}

}  // namespace

bool neighbour_max_supports(const at::Tensor& grouped) {
  return refusal(grouped).empty();
}

at::Tensor neighbour_max(const at::Tensor& grouped) {
  const std::string refused = refusal(grouped);
  TORCH_CHECK(refused.empty(), kOp, ": ", refused);
  return NeighbourMaxFunction::apply(grouped);
}

}  // namespace dtrain::kernels
