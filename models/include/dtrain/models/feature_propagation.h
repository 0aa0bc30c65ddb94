// PointNet++'s feature propagation layer (Qi et al., 2017, section 3.4):
// carries the features of a sparse set of points back to a denser set they
// were sampled from. Each dense point takes the inverse-squared-distance
// weighted average of its three nearest sparse points' features (the
// paper's p = 2, k = 3), concatenated with the dense points' own features
// from the matching set abstraction level (a skip link), then a shared MLP.
//
//   FeaturePropagation fp(FeaturePropagationOptions().in_channels(256 + 128).mlp({256, 128}));
//   at::Tensor dense = fp(xyz1, xyz2, features1, features2);  // (B, 128, N)
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

namespace dtrain::models {

struct FeaturePropagationOptions {
  // Channels into the MLP: the sparse features' plus the skip link's.
  TORCH_ARG(int64_t, in_channels) = 0;
  TORCH_ARG(std::vector<int64_t>, mlp);
  // Run the shared MLP on rows, one dense point's channels per row: each 1x1
  // convolution is then one matrix product, and each batch norm walks the
  // channels innermost (docs/design/models.md). The output is then a
  // (B, C, N) view of (B, N, C) rows. false keeps the channel-major
  // Conv1d layout of Python PointNet++ code. Parameters, checkpoints and
  // values (up to float rounding) are the same either way.
  TORCH_ARG(bool, channels_last) = true;
  // With channels_last, run each batch norm + ReLU as one fused op where it
  // can (CPU, float32 or bfloat16, batch statistics), as
  // SetAbstractionOptions::fused_norm_relu does.
  TORCH_ARG(bool, fused_norm_relu) = true;
};

// Conv1x1 -> BatchNorm -> ReLU for each width, over (B, C, N) inputs.
torch::nn::Sequential shared_mlp_1d(int64_t in_channels, const std::vector<int64_t>& widths);

class FeaturePropagationImpl : public torch::nn::Cloneable<FeaturePropagationImpl> {
 public:
  explicit FeaturePropagationImpl(const FeaturePropagationOptions& options);

  // Builds the layers from options(); called by the constructor, and by
  // clone() (DataParallel's copies) for each copy.
  void reset() override;

  // xyz1: (B, N, 3) dense points; xyz2: (B, M, 3) sparse points;
  // features1: (B, C1, N) skip features or undefined; features2: (B, C2, M).
  // With M = 1 (the output of a layer that grouped everything) every dense
  // point takes that one feature vector. C1 + C2 must be in_channels.
  // Returns (B, mlp.back(), N), with channels innermost in memory when
  // options().channels_last(). Throws c10::Error naming the argument.
  at::Tensor forward(const at::Tensor& xyz1, const at::Tensor& xyz2, const at::Tensor& features1,
                     const at::Tensor& features2);

  const FeaturePropagationOptions& options() const { return options_; }

 private:
  FeaturePropagationOptions options_;
  torch::nn::Sequential mlp_{nullptr};
};

TORCH_MODULE(FeaturePropagation);

// The interpolation alone: features2 (B, C, M) at the N points of xyz1,
// weighted by 1 / (squared distance + 1e-8) over the three nearest points
// of xyz2, normalised to sum to 1 (M = 1: that feature everywhere; M must
// otherwise be at least 3).
at::Tensor interpolate_three_nearest(const at::Tensor& xyz1, const at::Tensor& xyz2,
                                     const at::Tensor& features2);

}  // namespace dtrain::models
