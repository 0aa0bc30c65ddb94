// batch_norm_relu: input checks, the running statistics and the autograd
// Function over the CPU passes in src/cpu/batch_norm_relu.cpp.
//
// Note [fused batch norm ReLU]: LibTorch runs batch norm + ReLU on a
// channels-last CPU tensor as separate passes over memory: forward the
// mean, the variance, the normalisation and the ReLU; backward the ReLU's
// mask, then the batch norm's two sums and its input gradient. The fused op
// normalises and applies the ReLU in one pass, and its backward makes the
// sums and the input gradient in two, recomputing the ReLU's mask from the
// saved input instead of reading the output.
#include "dtrain/kernels/batch_norm_relu.h"

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <string>

#include "dispatch.h"

namespace dtrain::kernels {

namespace {

constexpr const char* kOp = "batch_norm_relu";

// input (N, C, ...) with the channels innermost, viewed as (R, C) rows.
at::Tensor as_rows(const at::Tensor& input) {
  return input.movedim(1, -1).view({-1, input.size(1)});
}

// (R, C) rows back into `like`'s shape and layout.
at::Tensor from_rows(const at::Tensor& rows, const at::Tensor& like) {
  return rows.view(like.movedim(1, -1).sizes()).movedim(-1, 1);
}

// The type the op computes in and keeps its statistics in: float32 for
// bfloat16 input, else the input's own.
at::ScalarType compute_type(const at::Tensor& input) {
  return input.scalar_type() == at::kBFloat16 ? at::kFloat : input.scalar_type();
}

// weight, bias and the running statistics: the input's type, or for
// bfloat16 input float32 (a bf16 autocast convolution's output beside the
// module's float32 parameters) or bfloat16 (a module converted to bf16).
bool takes_vector_type(at::ScalarType vector, const at::Tensor& input) {
  return vector == input.scalar_type() ||
         (input.scalar_type() == at::kBFloat16 && vector == at::kFloat);
}

void check_channel_vector(const char* name, const at::Tensor& t, const at::Tensor& input,
                          bool optional) {
  if (optional && !t.defined()) {
    return;
  }
  TORCH_CHECK(t.defined(), kOp, ": ", name, " is an undefined tensor");
  TORCH_CHECK(t.dim() == 1 && t.size(0) == input.size(1), kOp, ": ", name,
              " must have shape (C,) = (", input.size(1), ",), got shape ", t.sizes());
  TORCH_CHECK(takes_vector_type(t.scalar_type(), input), kOp, ": ", name, " must be ",
              input.scalar_type() == at::kBFloat16 ? "Float or BFloat16"
                                                   : c10::toString(input.scalar_type()),
              " for ", input.scalar_type(), " input, got ", t.scalar_type());
  TORCH_CHECK(t.device() == input.device(), kOp, ": ", name, " must be on ", input.device(),
              " like input, got ", t.device());
}

// Why batch_norm_relu refuses `input`, or "" when it takes it: one list of
// rules for batch_norm_relu_supports() and the op's own error.
std::string input_refusal(const at::Tensor& input) {
  if (!input.defined()) {
    return "input is an undefined tensor";
  }
  if (input.layout() != at::kStrided) {
    return c10::str("input must be a strided (dense) tensor, got ", input.layout());
  }
  if (input.dim() < 2) {
    return c10::str("input must have shape (N, C, ...), got shape ", input.sizes());
  }
  if (!input.device().is_cpu()) {
    return c10::str("runs on the CPU only, got input on ", input.device(),
                    " (on CUDA, cuDNN's batch norm and a ReLU serve)");
  }
  if (input.scalar_type() != at::kFloat && input.scalar_type() != at::kDouble &&
      input.scalar_type() != at::kBFloat16) {
    return c10::str("input must be float32, float64 or bfloat16, got ", input.scalar_type());
  }
  if (!input.movedim(1, -1).is_contiguous()) {
    return c10::str(
        "input must have its channels (dim 1) innermost in memory (channels-last), got strides ",
        input.strides(), " for shape ", input.sizes());
  }
  if (input.numel() / std::max<int64_t>(input.size(1), 1) <= 1) {
    return c10::str("expected more than 1 value per channel in training, got input of shape ",
                    input.sizes());
  }
  return "";
}

void check_inputs(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                  const at::Tensor& running_mean, const at::Tensor& running_var, double momentum,
                  double eps) {
  const std::string refused = input_refusal(input);
  TORCH_CHECK(refused.empty(), kOp, ": ", refused);
  check_channel_vector("weight", weight, input, /*optional=*/false);
  check_channel_vector("bias", bias, input, /*optional=*/false);
  check_channel_vector("running_mean", running_mean, input, /*optional=*/true);
  check_channel_vector("running_var", running_var, input, /*optional=*/true);
  TORCH_CHECK(running_mean.defined() == running_var.defined(), kOp,
              ": running_mean and running_var must both be given or both be undefined");
  TORCH_CHECK(momentum >= 0.0 && momentum <= 1.0, kOp, ": momentum must be in [0, 1], got ",
              momentum);
  TORCH_CHECK(eps > 0.0, kOp, ": eps must be > 0, got ", eps);
}

// The running statistics and their momentum, passed to the Function as one
// non-tensor argument: autograd would take tensors as inputs, and cannot
// take undefined ones (a layer without running statistics).
struct RunningStats {
  at::Tensor mean;
  at::Tensor var;
  double momentum;
};

class BatchNormReluFunction : public torch::autograd::Function<BatchNormReluFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input,
                            const at::Tensor& weight, const at::Tensor& bias,
                            const RunningStats& running, double eps) {
    const at::Tensor rows = as_rows(input);
    const at::ScalarType compute = compute_type(input);
    detail::NormReluForward out = detail::batch_norm_relu_forward_cpu(
        rows, weight.to(compute).contiguous(), bias.to(compute).contiguous(), eps);
    if (running.mean.defined()) {
      const double count = static_cast<double>(rows.size(0));
      const double momentum = running.momentum;
      running.mean.mul_(1.0 - momentum).add_(out.mean, momentum);
      running.var.mul_(1.0 - momentum).add_(out.variance_sum, momentum / (count - 1.0));
    }
    ctx->save_for_backward({input, weight, bias, out.mean, out.invstd});
    return from_rows(out.output, input);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& bias = saved[2];
    const at::ScalarType compute = compute_type(input);
    // The gradient in the input's layout and type, whatever it came in.
    const at::Tensor grad_rows = grad_outputs[0]
                                     .to(input.scalar_type())
                                     .movedim(1, -1)
                                     .contiguous()
                                     .view({-1, input.size(1)});
    detail::NormReluBackward grads = detail::batch_norm_relu_backward_cpu(
        grad_rows, as_rows(input), weight.to(compute).contiguous(), bias.to(compute).contiguous(),
        saved[3], saved[4]);
    return {from_rows(grads.grad_input, input), grads.grad_weight.to(weight.scalar_type()),
            grads.grad_bias.to(bias.scalar_type()), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

bool batch_norm_relu_supports(const at::Tensor& input) {
  return input_refusal(input).empty();
}

at::Tensor batch_norm_relu(const at::Tensor& input, const at::Tensor& weight,
                           const at::Tensor& bias, const at::Tensor& running_mean,
                           const at::Tensor& running_var, double momentum, double eps) {
  check_inputs(input, weight, bias, running_mean, running_var, momentum, eps);
  return BatchNormReluFunction::apply(input, weight, bias,
                                      RunningStats{running_mean, running_var, momentum}, eps);
}

}  // namespace dtrain::kernels
