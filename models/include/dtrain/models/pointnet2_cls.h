// PointNet++ classification (Qi et al., 2017): set abstraction layers that
// shrink the cloud to ever fewer, wider points, the last grouping all of
// them into one global feature, then a fully connected head.
//
// Presets (pointnet2_cls_preset):
//   "ssg"      the paper's single-scale network for 1024-point ModelNet40:
//              SA(512, r 0.2, 32, [64 64 128]) -> SA(128, r 0.4, 64, [128 128 256])
//              -> SA(all, [256 512 1024]) -> FC 512 -> FC 256 -> classes
//   "msg"      the paper's multi-scale network: three radii per layer
//   "ssg-lite" the same shape at a quarter of the centres, half the
//              neighbours and half the widths, for CPU training on small
//              clouds (512-1024 points)
//
//   PointNet2Cls model(pointnet2_cls_preset("ssg", 40));
//   at::Tensor logits = model(points);  // points (B, N, 3), logits (B, 40)
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include "dtrain/models/set_abstraction.h"

namespace dtrain::models {

struct PointNet2ClsOptions {
  TORCH_ARG(int64_t, num_classes) = 40;
  // Per-point channels after xyz in the input (3 for normals); 0 for xyz only.
  TORCH_ARG(int64_t, in_channels) = 0;
  // The set abstraction layers in order. Each layer's in_channels is set by
  // the model from the layer before (the first gets in_channels above).
  TORCH_ARG(std::vector<SetAbstractionOptions>, layers);
  // Widths of the hidden fully connected layers (each Linear -> BatchNorm ->
  // ReLU -> Dropout) before the last Linear to num_classes.
  TORCH_ARG(std::vector<int64_t>, head) = {512, 256};
  TORCH_ARG(double, dropout) = 0.5;
};

// The names pointnet2_cls_preset accepts, for --help texts and errors.
const std::vector<std::string>& pointnet2_cls_preset_names();

// One of the presets above; throws c10::Error naming the known presets for
// an unknown name.
PointNet2ClsOptions pointnet2_cls_preset(const std::string& name, int64_t num_classes,
                                         int64_t in_channels = 0);

class PointNet2ClsImpl : public torch::nn::Cloneable<PointNet2ClsImpl> {
 public:
  explicit PointNet2ClsImpl(const PointNet2ClsOptions& options);

  // Builds the layers from options(); called by the constructor, and by
  // clone() (DataParallel's copies) for each copy.
  void reset() override;

  // points: (B, N, 3 + in_channels), xyz first; N at least the first
  // layer's npoint. Returns logits (B, num_classes). Throws c10::Error
  // naming the expected shape.
  at::Tensor forward(const at::Tensor& points);

  const PointNet2ClsOptions& options() const { return options_; }

 private:
  PointNet2ClsOptions options_;
  std::vector<SetAbstraction> layers_;
  torch::nn::Sequential head_{nullptr};
};

TORCH_MODULE(PointNet2Cls);

}  // namespace dtrain::models
