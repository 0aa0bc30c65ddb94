#include "dtrain/models/pointnet2_cls.h"

#include <string>

#include <ATen/ATen.h>
#include <c10/util/StringUtil.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "norm_relu_layers.h"

namespace dtrain::models {

namespace {

SetAbstractionOptions sample(int64_t npoint, std::vector<GroupingScale> scales) {
  return SetAbstractionOptions().npoint(npoint).scales(std::move(scales));
}

SetAbstractionOptions group_all(std::vector<int64_t> mlp) {
  return SetAbstractionOptions().npoint(0).scales({{0, 0, std::move(mlp)}});
}

}  // namespace

const std::vector<std::string>& pointnet2_cls_preset_names() {
  static const std::vector<std::string> names{"ssg", "msg", "ssg-lite"};
  return names;
}

PointNet2ClsOptions pointnet2_cls_preset(const std::string& name, int64_t num_classes,
                                         int64_t in_channels) {
  auto options = PointNet2ClsOptions().num_classes(num_classes).in_channels(in_channels);
  if (name == "ssg") {
    return options.layers({sample(512, {{0.2, 32, {64, 64, 128}}}),
                           sample(128, {{0.4, 64, {128, 128, 256}}}), group_all({256, 512, 1024})});
  }
  if (name == "msg") {
    return options.layers(
        {sample(512,
                {{0.1, 16, {32, 32, 64}}, {0.2, 32, {64, 64, 128}}, {0.4, 128, {64, 96, 128}}}),
         sample(
             128,
             {{0.2, 32, {64, 64, 128}}, {0.4, 64, {128, 128, 256}}, {0.8, 128, {128, 128, 256}}}),
         group_all({256, 512, 1024})});
  }
  if (name == "ssg-lite") {
    return options
        .layers({sample(128, {{0.2, 16, {32, 32, 64}}}), sample(32, {{0.4, 32, {64, 64, 128}}}),
                 group_all({128, 256, 512})})
        .head({256, 128});
  }
  TORCH_CHECK(false, "pointnet2_cls_preset: unknown preset '", name,
              "'; known presets: ", c10::Join(", ", pointnet2_cls_preset_names()));
}

PointNet2ClsImpl::PointNet2ClsImpl(const PointNet2ClsOptions& options) : options_(options) {
  reset();
}

void PointNet2ClsImpl::reset() {
  layers_.clear();
  TORCH_CHECK(options_.num_classes() >= 2, "PointNet2ClsOptions: num_classes must be >= 2, got ",
              options_.num_classes());
  TORCH_CHECK(options_.in_channels() >= 0, "PointNet2ClsOptions: in_channels must be >= 0, got ",
              options_.in_channels());
  TORCH_CHECK(!options_.layers().empty(), "PointNet2ClsOptions: layers must not be empty");
  TORCH_CHECK(options_.layers().back().npoint() == 0,
              "PointNet2ClsOptions: the last layer must group all points (npoint 0), got npoint ",
              options_.layers().back().npoint());
  TORCH_CHECK(options_.dropout() >= 0 && options_.dropout() < 1,
              "PointNet2ClsOptions: dropout must be in [0, 1), got ", options_.dropout());
  int64_t channels = options_.in_channels();
  for (size_t i = 0; i < options_.layers().size(); ++i) {
    SetAbstractionOptions layer = options_.layers()[i];
    layer.in_channels(channels);
    layers_.push_back(register_module("sa" + std::to_string(i + 1), SetAbstraction(layer)));
    channels = layers_.back()->out_channels();
  }
  head_ = register_module("head", torch::nn::Sequential());
  channels = detail::append_norm_relu_layers<torch::nn::BatchNorm1d>(
      head_, channels, options_.head(),
      [](int64_t in, int64_t out) {
        return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
      },
      options_.dropout());
  head_->push_back(torch::nn::Linear(channels, options_.num_classes()));
}

at::Tensor PointNet2ClsImpl::forward(const at::Tensor& points) {
  const int64_t channels = 3 + options_.in_channels();
  TORCH_CHECK(points.dim() == 3 && points.size(2) == channels,
              "PointNet2Cls: points must have shape (B, N, ", channels, ") (xyz",
              options_.in_channels() > 0 ? " then features" : "", "), got ", points.sizes());
  at::Tensor xyz = points.narrow(2, 0, 3);
  at::Tensor features;
  if (options_.in_channels() > 0) {
    features = points.narrow(2, 3, options_.in_channels()).transpose(1, 2).contiguous();
  }
  for (auto& layer : layers_) {
    auto out = layer(xyz, features);
    xyz = out.xyz;
    features = out.features;
  }
  return head_->forward(features.squeeze(-1));  // (B, C, 1) -> (B, C)
}

}  // namespace dtrain::models
