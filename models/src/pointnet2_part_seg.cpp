#include "dtrain/models/pointnet2_part_seg.h"

#include <ATen/ATen.h>
#include <c10/util/StringUtil.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>

#include "dtrain/models/pointnet2_cls.h"
#include "fused_norm_relu.h"
#include "norm_relu_layers.h"

namespace dtrain::models {

const std::vector<std::string>& pointnet2_part_seg_preset_names() {
  static const std::vector<std::string> names{"ssg", "ssg-lite"};
  return names;
}

PointNet2PartSegOptions pointnet2_part_seg_preset(const std::string& name, int64_t num_parts,
                                                  int64_t num_categories, int64_t in_channels) {
  auto options = PointNet2PartSegOptions()
                     .num_parts(num_parts)
                     .num_categories(num_categories)
                     .in_channels(in_channels);
  if (name == "ssg") {
    // The classifier's encoder, the paper's decoder.
    return options.layers(pointnet2_cls_preset("ssg", 2).layers())
        .propagations({{256, 256}, {256, 128}, {128, 128, 128}})
        .head({128});
  }
  if (name == "ssg-lite") {
    return options.layers(pointnet2_cls_preset("ssg-lite", 2).layers())
        .propagations({{128, 128}, {128, 64}, {64, 64, 64}})
        .head({64});
  }
  TORCH_CHECK(false, "pointnet2_part_seg_preset: unknown preset '", name,
              "'; known presets: ", c10::Join(", ", pointnet2_part_seg_preset_names()));
}

PointNet2PartSegImpl::PointNet2PartSegImpl(const PointNet2PartSegOptions& options)
    : options_(options) {
  reset();
}

void PointNet2PartSegImpl::reset() {
  down_.clear();
  up_.clear();
  TORCH_CHECK(options_.num_parts() >= 2, "PointNet2PartSegOptions: num_parts must be >= 2, got ",
              options_.num_parts());
  TORCH_CHECK(options_.num_categories() >= 0,
              "PointNet2PartSegOptions: num_categories must be >= 0, got ",
              options_.num_categories());
  TORCH_CHECK(!options_.layers().empty() && options_.layers().back().npoint() == 0,
              "PointNet2PartSegOptions: layers must end with one that groups all points");
  TORCH_CHECK(options_.propagations().size() == options_.layers().size(),
              "PointNet2PartSegOptions: one propagation per set abstraction layer, got ",
              options_.propagations().size(), " for ", options_.layers().size());
  // Channels at each level: level 0 is the input, level i the output of
  // set abstraction i.
  std::vector<int64_t> level_channels{options_.in_channels()};
  for (size_t i = 0; i < options_.layers().size(); ++i) {
    SetAbstractionOptions layer = options_.layers()[i];
    layer.in_channels(level_channels.back());
    down_.push_back(register_module("sa" + std::to_string(i + 1), SetAbstraction(layer)));
    level_channels.push_back(down_.back()->out_channels());
  }
  // From the deepest level up: level j + 1's features (or the previous
  // propagation's) spread to level j and meet its skip link. Level 0's link
  // is the category one-hot, the coordinates and the input features.
  int64_t sparse_channels = level_channels.back();
  const size_t levels = options_.layers().size();
  for (size_t k = 0; k < levels; ++k) {
    const size_t level = levels - 1 - k;
    const int64_t skip_channels =
        level == 0 ? options_.num_categories() + 3 + options_.in_channels() : level_channels[level];
    TORCH_CHECK(!options_.propagations()[k].empty(), "PointNet2PartSegOptions: propagation ", k,
                " has an empty mlp");
    up_.push_back(
        register_module("fp" + std::to_string(level + 1),
                        FeaturePropagation(FeaturePropagationOptions()
                                               .in_channels(sparse_channels + skip_channels)
                                               .mlp(options_.propagations()[k])
                                               .channels_last(options_.channels_last())
                                               .fused_norm_relu(options_.fused_norm_relu()))));
    sparse_channels = options_.propagations()[k].back();
  }
  head_ = register_module("head", torch::nn::Sequential());
  const int64_t channels = detail::append_norm_relu_layers<torch::nn::BatchNorm1d>(
      head_, sparse_channels, options_.head(),
      [](int64_t in, int64_t out) {
        return torch::nn::Conv1d(torch::nn::Conv1dOptions(in, out, 1).bias(false));
      },
      options_.dropout());
  head_->push_back(torch::nn::Conv1d(torch::nn::Conv1dOptions(channels, options_.num_parts(), 1)));
}

at::Tensor PointNet2PartSegImpl::forward(const at::Tensor& points, const at::Tensor& categories) {
  const int64_t channels = 3 + options_.in_channels();
  TORCH_CHECK(points.dim() == 3 && points.size(2) == channels,
              "PointNet2PartSeg: points must have shape (B, N, ", channels, "), got ",
              points.sizes());
  const int64_t batch = points.size(0);
  const int64_t n = points.size(1);
  std::vector<at::Tensor> xyz{points.narrow(2, 0, 3).to(at::kFloat).contiguous()};
  std::vector<at::Tensor> features{
      options_.in_channels() > 0
          ? points.narrow(2, 3, options_.in_channels()).transpose(1, 2).contiguous()
          : at::Tensor()};
  for (auto& layer : down_) {
    auto out = layer(xyz.back(), features.back());
    xyz.push_back(out.xyz);
    features.push_back(out.features);
  }
  // Level 0's skip link: [one-hot category, xyz, input features].
  std::vector<at::Tensor> link;
  if (options_.num_categories() > 0) {
    TORCH_CHECK(categories.defined() && categories.dim() == 1 && categories.size(0) == batch &&
                    categories.scalar_type() == at::kLong,
                "PointNet2PartSeg: categories must be (B,) = (", batch, ",) int64, got ",
                categories.defined() ? c10::str(categories.sizes(), " ", categories.scalar_type())
                                     : std::string("undefined"));
    TORCH_CHECK(categories.min().item<int64_t>() >= 0 &&
                    categories.max().item<int64_t>() < options_.num_categories(),
                "PointNet2PartSeg: categories must lie in [0, ", options_.num_categories(), ")");
    link.push_back(at::one_hot(categories, options_.num_categories())
                       .to(xyz[0].scalar_type())
                       .unsqueeze(-1)
                       .expand({batch, options_.num_categories(), n}));
  }
  link.push_back(xyz[0].transpose(1, 2));
  if (features[0].defined()) {
    link.push_back(features[0].to(xyz[0].scalar_type()));
  }
  const at::Tensor level0_link = at::cat(link, 1);

  const size_t levels = down_.size();
  at::Tensor up = features[levels];
  for (size_t k = 0; k < levels; ++k) {
    const size_t level = levels - 1 - k;
    up = up_[k](xyz[level], xyz[level + 1], level == 0 ? level0_link : features[level], up);
  }
  if (!options_.channels_last()) {
    return head_->forward(up);
  }
  // The last propagation's (B, C, N) is a view of rows (B, N, C): the head's
  // 1x1 convolutions run on them too, and the logits come back as a
  // (B, parts, N) view of rows.
  return detail::forward_points_on_rows(head_, up.transpose(1, 2), options_.fused_norm_relu());
}

}  // namespace dtrain::models
