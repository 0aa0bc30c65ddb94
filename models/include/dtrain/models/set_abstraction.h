// PointNet++'s set abstraction layer (Qi et al., 2017): sample centres with
// furthest point sampling, gather each centre's neighbourhood with a ball
// query, run a shared MLP over every neighbour (coordinates relative to the
// centre, plus the features it carries) and max-pool over the neighbourhood.
//
// One layer may have several scales (multi-scale grouping, "MSG"): each scale
// has its own radius, neighbour count and MLP, and their outputs are
// concatenated. One scale is the single-scale "SSG" layer. With npoint = 0
// the layer groups all points around the origin into one centre (the last
// layer of the classifier).
//
//   SetAbstraction sa(SetAbstractionOptions()
//                         .npoint(512)
//                         .in_channels(0)
//                         .scales({{0.2, 32, {64, 64, 128}}}));
//   auto [centres, features] = sa(xyz, at::Tensor());  // (B, 512, 3), (B, 128, 512)
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

namespace dtrain::models {

// One neighbourhood scale of a set abstraction layer.
struct GroupingScale {
  double radius = 0;         // ball query radius (ignored when grouping all)
  int64_t nsample = 0;       // neighbours per centre (ignored when grouping all)
  std::vector<int64_t> mlp;  // output channels of the shared MLP's layers
};

struct SetAbstractionOptions {
  // Centres to sample; 0 groups every point into one centre at the origin.
  TORCH_ARG(int64_t, npoint) = 0;
  // Feature channels of the input (besides the coordinates); 0 for raw xyz.
  TORCH_ARG(int64_t, in_channels) = 0;
  // Feed each neighbour's coordinates, relative to its centre, to the MLP
  // beside its features (PointNet++ does).
  TORCH_ARG(bool, use_xyz) = true;
  TORCH_ARG(std::vector<GroupingScale>, scales);
  // Run the shared MLP on channels-last groups, with the features kept
  // point-major (channels innermost) between layers, which makes a CPU
  // training step faster (docs/design/models.md). false keeps the channel-major
  // (B, C, M, K) layout of Python PointNet++ code. Parameters, checkpoints
  // and values (up to float rounding) are the same either way.
  TORCH_ARG(bool, channels_last) = true;
  // Run each batch norm + ReLU of the shared MLP as one fused op where it
  // can (CPU, float32, channels-last, batch statistics: while training
  // with channels_last), instead of LibTorch's two: 1.4 to 2.1 times faster
  // for the pair, forward and backward (benchmarks/results/
  // batch_norm_relu_cpu.csv). false runs the modules as they are. Parameters
  // and checkpoints are the same either way; values agree up to float
  // rounding (the fused op adds its blocks' batch sums in double).
  TORCH_ARG(bool, fused_norm_relu) = true;
};

// Conv1x1 -> BatchNorm -> ReLU for each width, over (B, C, M, K) inputs:
// PointNet's MLP shared by every point.
torch::nn::Sequential shared_mlp_2d(int64_t in_channels, const std::vector<int64_t>& widths);

class SetAbstractionImpl : public torch::nn::Cloneable<SetAbstractionImpl> {
 public:
  explicit SetAbstractionImpl(const SetAbstractionOptions& options);

  // Builds the layers from options(); called by the constructor, and by
  // clone() (DataParallel's copies) for each copy.
  void reset() override;

  struct Output {
    at::Tensor xyz;       // (B, npoint, 3) float32 centres ((B, 1, 3) zeros when grouping all)
    at::Tensor features;  // (B, out_channels(), npoint)
  };

  // xyz: (B, N, 3) coordinates (any floating dtype; sampling and grouping
  // compute in float32). features: (B, in_channels, N), or undefined when
  // in_channels is 0. Throws c10::Error naming the argument and its shape.
  Output forward(const at::Tensor& xyz, const at::Tensor& features);

  // Sum over scales of each MLP's last width.
  int64_t out_channels() const;
  const SetAbstractionOptions& options() const { return options_; }

 private:
  // Every point as one group around the origin: (B, 3 + C, 1, N).
  at::Tensor group_all(const at::Tensor& xyz_t, const at::Tensor& features) const;
  // The neighbourhoods of `centres` at one scale: (B, 3 + C, M, nsample).
  at::Tensor group_ball(const at::Tensor& xyz, const at::Tensor& xyz_t, const at::Tensor& centres,
                        const at::Tensor& features, const GroupingScale& scale) const;

  SetAbstractionOptions options_;
  std::vector<torch::nn::Sequential> mlps_;  // one per scale
};

TORCH_MODULE(SetAbstraction);

}  // namespace dtrain::models
