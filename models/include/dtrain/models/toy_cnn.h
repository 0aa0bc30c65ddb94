// The toy CNN of the seed tutorials (LeNet-5 shaped):
//
//   conv(in_channels -> 6, k5) -> relu -> maxpool 2
//   conv(6 -> 16, k5)          -> relu -> maxpool 2
//   flatten(16*5*5) -> fc 120 -> relu -> fc 84 -> relu -> fc num_classes
//
// Input (B, in_channels, 32, 32); output logits (B, num_classes).
//
//   dtrain::models::ToyCnn model(dtrain::models::ToyCnnOptions().in_channels(1));
#pragma once

#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>

namespace dtrain::models {

struct ToyCnnOptions {
  // 3 for CIFAR-10 as in the seed; 1 for Fashion-MNIST.
  TORCH_ARG(int64_t, in_channels) = 3;
  TORCH_ARG(int64_t, num_classes) = 10;
};

class ToyCnnImpl : public torch::nn::Cloneable<ToyCnnImpl> {
 public:
  explicit ToyCnnImpl(const ToyCnnOptions& options = {});

  // Builds the layers from options(); called by the constructor, and by
  // clone() (DataParallel's copies) for each copy.
  void reset() override;

  // Throws c10::Error naming the expected shape when x is not (B, in_channels, 32, 32).
  torch::Tensor forward(const torch::Tensor& x);

  const ToyCnnOptions& options() const { return options_; }

 private:
  ToyCnnOptions options_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::MaxPool2d pool_{nullptr};
  torch::nn::Linear fc1_{nullptr};
  torch::nn::Linear fc2_{nullptr};
  torch::nn::Linear fc3_{nullptr};
};

TORCH_MODULE(ToyCnn);

}  // namespace dtrain::models
