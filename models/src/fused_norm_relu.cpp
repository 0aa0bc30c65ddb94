#include "fused_norm_relu.h"

#include <optional>

#include <ATen/ops/linear.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>

#include "dtrain/kernels/batch_norm_relu.h"

namespace dtrain::models::detail {

namespace {

// The input ranks each BatchNorm accepts (its _check_input_dim): a pair is
// fused only where the module itself would have run.
bool takes_rank(const torch::nn::BatchNorm1dImpl&, const at::Tensor& x) {
  return x.dim() == 2 || x.dim() == 3;
}
bool takes_rank(const torch::nn::BatchNorm2dImpl&, const at::Tensor& x) {
  return x.dim() == 4;
}

// relu(norm(x)) through the fused kernel, or nullopt where it does not
// apply. Updates num_batches_tracked and picks the running statistics'
// factor exactly as torch's BatchNormImplBase::forward does.
template <typename Norm>
std::optional<at::Tensor> fused(Norm& norm, const at::Tensor& x) {
  const auto& options = norm.options;
  const bool batch_statistics = norm.is_training() || !options.track_running_stats();
  if (!batch_statistics || !options.affine() || !takes_rank(norm, x) ||
      !kernels::batch_norm_relu_supports(x)) {
    return std::nullopt;
  }
  double factor = options.momentum().value_or(0.0);
  const bool updates_running = norm.is_training() && options.track_running_stats();
  if (updates_running && norm.num_batches_tracked.defined()) {
    norm.num_batches_tracked += 1;
    if (!options.momentum()) {  // a cumulative moving average
      factor = 1.0 / norm.num_batches_tracked.template item<double>();
    }
  }
  return kernels::batch_norm_relu(
      x, norm.weight, norm.bias, updates_running ? norm.running_mean : at::Tensor(),
      updates_running ? norm.running_var : at::Tensor(), factor, options.eps());
}

std::optional<at::Tensor> fused_pair(torch::nn::Module& norm, torch::nn::Module& next,
                                     const at::Tensor& x) {
  if (next.as<torch::nn::ReLUImpl>() == nullptr) {
    return std::nullopt;
  }
  if (auto* norm_2d = norm.as<torch::nn::BatchNorm2dImpl>()) {
    return fused(*norm_2d, x);
  }
  if (auto* norm_1d = norm.as<torch::nn::BatchNorm1dImpl>()) {
    return fused(*norm_1d, x);
  }
  return std::nullopt;
}

// A 1x1 convolution over rows (R, C_in): at::linear with its weight
// (C_out, C_in, 1) seen as (C_out, C_in). nullopt for any other module.
std::optional<at::Tensor> conv1x1_on_rows(torch::nn::Module& layer, const at::Tensor& rows) {
  auto* conv = layer.as<torch::nn::Conv1dImpl>();
  if (conv == nullptr) {
    return std::nullopt;
  }
  const auto& options = conv->options;
  const auto* padding = std::get_if<torch::ExpandingArray<1>>(&options.padding());
  const bool no_padding = padding != nullptr && (*padding)->at(0) == 0;
  TORCH_CHECK(options.kernel_size()->at(0) == 1 && options.stride()->at(0) == 1 &&
                  options.dilation()->at(0) == 1 && options.groups() == 1 && no_padding,
              "forward_on_rows: only 1x1 convolutions run on rows, got kernel size ",
              options.kernel_size()->at(0), ", stride ", options.stride()->at(0), ", dilation ",
              options.dilation()->at(0), ", groups ", options.groups(),
              no_padding ? ", no padding" : ", padding");
  return at::linear(rows, conv->weight.squeeze(-1),
                    conv->bias.defined() ? c10::optional<at::Tensor>(conv->bias) : c10::nullopt);
}

// Runs the stack, each batch norm + ReLU pair fused where it qualifies (when
// `fuse`), each module `replace` answers for by its answer.
template <typename Replace>
at::Tensor run_stack(torch::nn::Sequential& stack, at::Tensor x, bool fuse, Replace replace) {
  const auto end = stack->end();
  for (auto module = stack->begin(); module != end; ++module) {
    const auto next = module + 1;
    if (fuse && next != end) {
      if (auto y = fused_pair(*module->ptr(), *next->ptr(), x)) {
        x = std::move(*y);
        module = next;  // the ReLU ran inside
        continue;
      }
    }
    if (auto y = replace(*module->ptr(), x)) {
      x = std::move(*y);
      continue;
    }
    x = module->forward(x);
  }
  return x;
}

}  // namespace

at::Tensor forward_fusing_norm_relu(torch::nn::Sequential& stack, at::Tensor x) {
  return run_stack(stack, std::move(x), /*fuse=*/true,
                   [](torch::nn::Module&, const at::Tensor&) -> std::optional<at::Tensor> {
                     return std::nullopt;
                   });
}

at::Tensor forward_on_rows(torch::nn::Sequential& stack, at::Tensor rows, bool fuse) {
  TORCH_CHECK(rows.dim() == 2, "forward_on_rows: rows must be (R, C), got ", rows.sizes());
  return run_stack(stack, std::move(rows), fuse, conv1x1_on_rows);
}

at::Tensor forward_points_on_rows(torch::nn::Sequential& stack, const at::Tensor& points,
                                  bool fuse) {
  TORCH_CHECK(points.dim() == 3, "forward_points_on_rows: points must be (B, N, C), got ",
              points.sizes());
  const int64_t batch = points.size(0);
  const int64_t n = points.size(1);
  const at::Tensor out = forward_on_rows(stack, points.reshape({batch * n, points.size(2)}), fuse);
  return out.view({batch, n, out.size(1)}).transpose(1, 2);
}

}  // namespace dtrain::models::detail
