#include "dtrain/models/feature_propagation.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>

#include "dtrain/kernels/pointnet2.h"
#include "fused_norm_relu.h"
#include "norm_relu_layers.h"

namespace dtrain::models {

torch::nn::Sequential shared_mlp_1d(int64_t in_channels, const std::vector<int64_t>& widths) {
  torch::nn::Sequential mlp;
  detail::append_norm_relu_layers<torch::nn::BatchNorm1d>(
      mlp, in_channels, widths, [](int64_t in, int64_t out) {
        return torch::nn::Conv1d(torch::nn::Conv1dOptions(in, out, 1).bias(false));
      });
  return mlp;
}

at::Tensor interpolate_three_nearest(const at::Tensor& xyz1, const at::Tensor& xyz2,
                                     const at::Tensor& features2) {
  TORCH_CHECK(xyz1.dim() == 3 && xyz1.size(2) == 3,
              "FeaturePropagation: xyz1 must have shape (B, N, 3), got ", xyz1.sizes());
  TORCH_CHECK(xyz2.dim() == 3 && xyz2.size(2) == 3 && xyz2.size(0) == xyz1.size(0),
              "FeaturePropagation: xyz2 must have shape (B, M, 3) with B = ", xyz1.size(0),
              ", got ", xyz2.sizes());
  TORCH_CHECK(features2.defined() && features2.dim() == 3 && features2.size(0) == xyz2.size(0) &&
                  features2.size(2) == xyz2.size(1),
              "FeaturePropagation: features2 must have shape (B, C, M) = (", xyz2.size(0), ", C, ",
              xyz2.size(1), "), got ",
              features2.defined() ? c10::str(features2.sizes()) : std::string("undefined"));
  const int64_t n = xyz1.size(1);
  if (xyz2.size(1) == 1) {
    return features2.expand({features2.size(0), features2.size(1), n});
  }
  TORCH_CHECK(xyz2.size(1) >= 3, "FeaturePropagation: xyz2 needs 1 or at least 3 points, got ",
              xyz2.size(1));
  const auto nearest = kernels::three_nn(xyz1.to(at::kFloat), xyz2.to(at::kFloat));
  // The paper's inverse distance weights with p = 2: 1 / d^2, normalised.
  // The 1e-8 keeps a dense point that coincides with a sparse one finite
  // (it then takes almost all of that point's feature).
  const at::Tensor inverse = 1.0 / (nearest.dist2 + 1e-8);
  const at::Tensor weight = inverse / inverse.sum(-1, /*keepdim=*/true);
  return kernels::three_interpolate(features2, nearest.idx, weight);
}

FeaturePropagationImpl::FeaturePropagationImpl(const FeaturePropagationOptions& options)
    : options_(options) {
  reset();
}

void FeaturePropagationImpl::reset() {
  TORCH_CHECK(options_.in_channels() >= 1,
              "FeaturePropagationOptions: in_channels must be >= 1, got ", options_.in_channels());
  TORCH_CHECK(!options_.mlp().empty(), "FeaturePropagationOptions: mlp must not be empty");
  mlp_ = register_module("mlp", shared_mlp_1d(options_.in_channels(), options_.mlp()));
}

at::Tensor FeaturePropagationImpl::forward(const at::Tensor& xyz1, const at::Tensor& xyz2,
                                           const at::Tensor& features1,
                                           const at::Tensor& features2) {
  const at::Tensor interpolated = interpolate_three_nearest(xyz1, xyz2, features2);
  // The MLP's input, channel-major (B, C, N) or as rows (B, N, C): the
  // interpolated features, then the skip features in their dtype (bf16
  // under autocast).
  std::vector<at::Tensor> parts{interpolated};
  if (features1.defined()) {
    TORCH_CHECK(features1.dim() == 3 && features1.size(0) == xyz1.size(0) &&
                    features1.size(2) == xyz1.size(1),
                "FeaturePropagation: features1 must have shape (B, C, N) = (", xyz1.size(0),
                ", C, ", xyz1.size(1), "), got ", features1.sizes());
    parts.push_back(features1.to(interpolated.scalar_type()));
  }
  const int64_t channels = interpolated.size(1) + (features1.defined() ? features1.size(1) : 0);
  TORCH_CHECK(channels == options_.in_channels(), "FeaturePropagation: ", features2.size(1),
              " sparse + ", features1.defined() ? features1.size(1) : 0,
              " skip channels = ", channels, ", but in_channels is ", options_.in_channels());
  if (!options_.channels_last()) {
    return mlp_->forward(at::cat(parts, 1));
  }
  // One copy into rows: the cat of the transposed parts is a new contiguous
  // (B, N, C) tensor (a single part is copied by the reshape into rows).
  for (at::Tensor& part : parts) {
    part = part.transpose(1, 2);
  }
  const at::Tensor joined = parts.size() == 1 ? parts[0] : at::cat(parts, 2);
  return detail::forward_points_on_rows(mlp_, joined, options_.fused_norm_relu());
}

}  // namespace dtrain::models
