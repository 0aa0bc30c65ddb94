#include "fused_norm_relu.h"

#include <optional>

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>

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

}  // namespace

at::Tensor forward_fusing_norm_relu(torch::nn::Sequential& stack, at::Tensor x) {
  const auto end = stack->end();
  for (auto module = stack->begin(); module != end; ++module) {
    const auto next = module + 1;
    if (next != end) {
      if (auto y = fused_pair(*module->ptr(), *next->ptr(), x)) {
        x = std::move(*y);
        module = next;  // the ReLU ran inside
        continue;
      }
    }
    x = module->forward(x);
  }
  return x;
}

}  // namespace dtrain::models::detail
