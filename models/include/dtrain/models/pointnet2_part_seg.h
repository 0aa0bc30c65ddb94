// PointNet++ part segmentation (Qi et al., 2017; the ShapeNet-Part network):
// set abstraction layers down to one global feature, then feature
// propagation layers back up to every input point, each joined with the
// features of its level (skip links); the first level's skip link carries
// the points' coordinates, their features and the object's category as a
// one-hot vector. A head of 1x1 convolutions gives every point's part logits.
//
// Presets (pointnet2_part_seg_preset):
//   "ssg"      the paper's single-scale segmentation network: the "ssg"
//              classifier's layers, then FP(256 256), FP(256 128),
//              FP(128 128 128), conv 128 with dropout 0.5 -> parts
//   "ssg-lite" the "ssg-lite" classifier's layers, then FP(128 128),
//              FP(128 64), FP(64 64 64), conv 64 -> parts; for CPUs
//
//   PointNet2PartSeg model(pointnet2_part_seg_preset("ssg", /*num_parts=*/50,
//   /*num_categories=*/16)); at::Tensor logits = model(points, categories);  // (B, N, 3), (B,) ->
//   (B, 50, N)
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include "dtrain/models/feature_propagation.h"
#include "dtrain/models/set_abstraction.h"

namespace dtrain::models {

struct PointNet2PartSegOptions {
  TORCH_ARG(int64_t, num_parts) = 50;
  // Object categories, given to forward as labels and fed to the network
  // as a one-hot vector (ShapeNet-Part: 16); 0 when there are none.
  TORCH_ARG(int64_t, num_categories) = 16;
  // Per-point channels after xyz in the input (3 for normals).
  TORCH_ARG(int64_t, in_channels) = 0;
  // Set abstraction layers, the last grouping all points; their in_channels
  // are set by the model.
  TORCH_ARG(std::vector<SetAbstractionOptions>, layers);
  // The MLP widths of the feature propagation layers, one per set
  // abstraction layer, deepest first (the order they run in).
  TORCH_ARG(std::vector<std::vector<int64_t>>, propagations);
  // Widths of the per-point head (conv -> batch norm -> ReLU -> dropout)
  // before the last conv to num_parts.
  TORCH_ARG(std::vector<int64_t>, head) = {128};
  TORCH_ARG(double, dropout) = 0.5;
  // The feature propagations and the head run on rows of channels, their
  // batch norm + ReLU pairs fused where the kernel takes them
  // (FeaturePropagationOptions::channels_last, ::fused_norm_relu); the set
  // abstractions follow their own options in `layers`.
  TORCH_ARG(bool, channels_last) = true;
  TORCH_ARG(bool, fused_norm_relu) = true;
};

const std::vector<std::string>& pointnet2_part_seg_preset_names();

// One of the presets above; throws c10::Error naming the known presets for
// an unknown name.
PointNet2PartSegOptions pointnet2_part_seg_preset(const std::string& name, int64_t num_parts,
                                                  int64_t num_categories, int64_t in_channels = 0);

class PointNet2PartSegImpl : public torch::nn::Cloneable<PointNet2PartSegImpl> {
 public:
  explicit PointNet2PartSegImpl(const PointNet2PartSegOptions& options);

  // Builds the layers from options(); called by the constructor, and by
  // clone() (DataParallel's copies) for each copy.
  void reset() override;

  // points: (B, N, 3 + in_channels), xyz first. categories: (B,) int64 in
  // [0, num_categories), or undefined when num_categories is 0. Returns
  // per-point part logits (B, num_parts, N). Throws c10::Error naming the
  // argument.
  at::Tensor forward(const at::Tensor& points, const at::Tensor& categories = {});

  const PointNet2PartSegOptions& options() const { return options_; }

 private:
  PointNet2PartSegOptions options_;
  std::vector<SetAbstraction> down_;
  std::vector<FeaturePropagation> up_;  // deepest first
  torch::nn::Sequential head_{nullptr};
};

TORCH_MODULE(PointNet2PartSeg);

}  // namespace dtrain::models
