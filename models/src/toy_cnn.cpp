#include "dtrain/models/toy_cnn.h"

#include <torch/nn/functional/activation.h>

namespace dtrain::models {

namespace F = torch::nn::functional;

ToyCnnImpl::ToyCnnImpl(const ToyCnnOptions& options) : options_(options) {
  reset();
}

void ToyCnnImpl::reset() {
  TORCH_CHECK(options_.in_channels() >= 1, "ToyCnnOptions: in_channels must be >= 1, got ",
              options_.in_channels());
  TORCH_CHECK(options_.num_classes() >= 2, "ToyCnnOptions: num_classes must be >= 2, got ",
              options_.num_classes());
  conv1_ = register_module(
      "conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(options_.in_channels(), 6, 5)));
  pool_ = register_module("pool", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)));
  conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(6, 16, 5)));
  fc1_ = register_module("fc1", torch::nn::Linear(16 * 5 * 5, 120));
  fc2_ = register_module("fc2", torch::nn::Linear(120, 84));
  fc3_ = register_module("fc3", torch::nn::Linear(84, options_.num_classes()));
}

torch::Tensor ToyCnnImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(
      x.dim() == 4 && x.size(1) == options_.in_channels() && x.size(2) == 32 && x.size(3) == 32,
      "ToyCnn: input must have shape (B, ", options_.in_channels(), ", 32, 32), got ", x.sizes());
  auto h = pool_(F::relu(conv1_(x)));
  h = pool_(F::relu(conv2_(h)));
  h = h.flatten(1);
  h = F::relu(fc1_(h));
  h = F::relu(fc2_(h));
  return fc3_(h);
}

}  // namespace dtrain::models
