#include "dtrain/models/set_abstraction.h"

#include <string>

#include <ATen/ATen.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>

#include "dtrain/kernels/neighbour_max.h"
#include "dtrain/kernels/pointnet2.h"
#include "fused_norm_relu.h"
#include "norm_relu_layers.h"

namespace dtrain::models {

namespace kernels = dtrain::kernels;

namespace {

// The shared MLP runs on channels-last tensors: a 1x1 convolution is then
// one matrix product over rows of channels, and batch norm and ReLU walk
// the channels innermost. On the CPU (oneDNN) that makes a training step a
// fifth (ssg-lite) to a third (ssg) shorter than in the channel-major
// (B, C, M, K) layout Python PointNet++ code keeps
// (benchmarks/results/pointnet2_train_cpu.csv). On CUDA, the layout cuDNN
// documents as fastest for fp16/bf16 tensor-core convolutions, the `ssg`
// step at 32 x 1024 points took 8.8 ms against 13.0 channel-major on an
// H200 (benchmarks/results/gpu_summary.txt). The values, shapes and
// parameters are the same in either layout.
at::Tensor channels_last(const at::Tensor& grouped) {
  return grouped.contiguous(at::MemoryFormat::ChannelsLast);
}

// (B, C, M, K) channels-last -> (B, C, M), channels innermost. On the CPU
// the kernels' neighbour_max takes each neighbour's channels as one
// contiguous row in a vectorised pass. Elsewhere the maximum is taken over
// the neighbour dimension of the (B, M, K, C) view (a reduction over the
// last dimension would stride through memory, 2.5 times slower). Both are
// max with indices rather than amax: the backward routes each gradient to
// the one winning neighbour by index, where amax's compares every element
// with the maximum and divides among ties (about a third of the layer's
// backward time on the CPU).
at::Tensor max_over_neighbours(const at::Tensor& per_neighbour) {
  if (kernels::neighbour_max_supports(per_neighbour)) {
    return kernels::neighbour_max(per_neighbour);
  }
  return std::get<0>(per_neighbour.permute({0, 2, 3, 1}).max(2)).permute({0, 2, 1});
}

// The shared MLP over one scale's groups, then the max over each
// neighbourhood: channels-last (above), or channel-major throughout.
at::Tensor pool_mlp(torch::nn::Sequential& mlp, const at::Tensor& grouped,
                    const SetAbstractionOptions& options) {
  if (options.channels_last()) {
    const at::Tensor input = channels_last(grouped);
    return max_over_neighbours(options.fused_norm_relu()
                                   ? detail::forward_fusing_norm_relu(mlp, input)
                                   : mlp->forward(input));
  }
  return std::get<0>(mlp->forward(grouped.contiguous()).max(-1));
}

// The grouped coordinates and features, either undefined, concatenated
// along channels (coordinates first). Under autocast the features are
// bf16/fp16: the coordinates join them in that dtype rather than promoting
// the layer's largest tensor to float32 (the convolution rounds its input
// to that dtype anyway).
at::Tensor join_channels(const at::Tensor& coordinates, const at::Tensor& features) {
  if (!coordinates.defined()) {
    return features;
  }
  if (!features.defined()) {
    return coordinates;
  }
  return at::cat({coordinates.to(features.scalar_type()), features}, 1);
}

// The scales' outputs (B, C_s, M), point-major, concatenated along channels
// into a point-major (B, sum C_s, M): at::cat would lay a 3-d result out
// channel-major, and the next layer's grouping would then read it column
// by column (Note [point-major features] in the kernels).
at::Tensor join_point_major(const std::vector<at::Tensor>& outputs) {
  std::vector<at::Tensor> rows;
  rows.reserve(outputs.size());
  for (const at::Tensor& output : outputs) {
    rows.push_back(output.transpose(1, 2));  // (B, M, C_s)
  }
  return at::cat(rows, 2).transpose(1, 2);
}

}  // namespace

torch::nn::Sequential shared_mlp_2d(int64_t in_channels, const std::vector<int64_t>& widths) {
  torch::nn::Sequential mlp;
  detail::append_norm_relu_layers<torch::nn::BatchNorm2d>(
      mlp, in_channels, widths, [](int64_t in, int64_t out) {
        return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).bias(false));
      });
  return mlp;
}

SetAbstractionImpl::SetAbstractionImpl(const SetAbstractionOptions& options) : options_(options) {
  reset();
}

void SetAbstractionImpl::reset() {
  mlps_.clear();
  TORCH_CHECK(options_.npoint() >= 0, "SetAbstractionOptions: npoint must be >= 0, got ",
              options_.npoint());
  TORCH_CHECK(options_.in_channels() >= 0, "SetAbstractionOptions: in_channels must be >= 0, got ",
              options_.in_channels());
  TORCH_CHECK(!options_.scales().empty(), "SetAbstractionOptions: scales must not be empty");
  TORCH_CHECK(options_.use_xyz() || options_.in_channels() > 0,
              "SetAbstractionOptions: with use_xyz false, in_channels must be > 0 (the MLP "
              "would see no input)");
  TORCH_CHECK(options_.npoint() > 0 || options_.scales().size() == 1,
              "SetAbstractionOptions: grouping all points (npoint 0) takes one scale, got ",
              options_.scales().size());
  const int64_t mlp_in = options_.in_channels() + (options_.use_xyz() ? 3 : 0);
  for (size_t s = 0; s < options_.scales().size(); ++s) {
    const GroupingScale& scale = options_.scales()[s];
    TORCH_CHECK(!scale.mlp.empty(), "SetAbstractionOptions: scale ", s, " has an empty mlp");
    if (options_.npoint() > 0) {
      TORCH_CHECK(scale.radius > 0, "SetAbstractionOptions: scale ", s, " radius must be > 0, got ",
                  scale.radius);
      TORCH_CHECK(scale.nsample >= 1, "SetAbstractionOptions: scale ", s,
                  " nsample must be >= 1, got ", scale.nsample);
    }
    mlps_.push_back(register_module("mlp" + std::to_string(s), shared_mlp_2d(mlp_in, scale.mlp)));
  }
}

int64_t SetAbstractionImpl::out_channels() const {
  int64_t channels = 0;
  for (const GroupingScale& scale : options_.scales()) {
    channels += scale.mlp.back();
  }
  return channels;
}

at::Tensor SetAbstractionImpl::group_all(const at::Tensor& xyz_t,
                                         const at::Tensor& features) const {
  return join_channels(options_.use_xyz() ? xyz_t.unsqueeze(2) : at::Tensor(),
                       features.defined() ? features.unsqueeze(2) : at::Tensor());
}

at::Tensor SetAbstractionImpl::group_ball(const at::Tensor& xyz, const at::Tensor& xyz_t,
                                          const at::Tensor& centres, const at::Tensor& features,
                                          const GroupingScale& scale) const {
  // The centre is a point of the cloud, so no ball is empty: every row of
  // the query holds at least the centre itself.
  const at::Tensor neighbours = kernels::ball_query(centres, xyz, scale.radius, scale.nsample).idx;
  return join_channels(
      options_.use_xyz()
          ? kernels::group_points(xyz_t, neighbours) - centres.transpose(1, 2).unsqueeze(-1)
          : at::Tensor(),
      features.defined() ? kernels::group_points(features, neighbours) : at::Tensor());
}

SetAbstractionImpl::Output SetAbstractionImpl::forward(const at::Tensor& xyz,
                                                       const at::Tensor& features) {
  TORCH_CHECK(xyz.dim() == 3 && xyz.size(2) == 3,
              "SetAbstraction: xyz must have shape (B, N, 3), got ", xyz.sizes());
  const int64_t batch = xyz.size(0);
  const int64_t n = xyz.size(1);
  if (options_.in_channels() > 0) {
    TORCH_CHECK(features.defined() && features.dim() == 3 && features.size(0) == batch &&
                    features.size(1) == options_.in_channels() && features.size(2) == n,
                "SetAbstraction: features must have shape (B, ", options_.in_channels(), ", N) = (",
                batch, ", ", options_.in_channels(), ", ", n, "), got ",
                features.defined() ? c10::str(features.sizes()) : std::string("undefined"));
  } else {
    TORCH_CHECK(!features.defined(),
                "SetAbstraction: in_channels is 0, so features must be undefined, got a tensor "
                "of shape ",
                features.sizes());
  }
  // Coordinates stay float32 whatever autocast does to the features: the
  // sampling and grouping kernels compute distances in float32.
  const at::Tensor points = xyz.to(at::kFloat).contiguous();
  // (B, 3, N) point-major: the grouping kernels then write channels-last
  // groups (Note [point-major features] in the kernels).
  const bool channels_last_mlp = options_.channels_last();
  const at::Tensor points_t =
      channels_last_mlp ? points.transpose(1, 2) : points.transpose(1, 2).contiguous();

  if (options_.npoint() == 0) {
    const at::Tensor grouped = group_all(points_t, features);
    const at::Tensor out = pool_mlp(mlps_[0], grouped, options_);
    return {at::zeros({batch, 1, 3}, points.options()), out};
  }

  TORCH_CHECK(options_.npoint() <= n, "SetAbstraction: npoint ", options_.npoint(), " exceeds the ",
              n, " points of xyz");
  const at::Tensor sampled = kernels::furthest_point_sample(points, options_.npoint());
  const at::Tensor centres =
      kernels::gather_points(points_t, sampled).transpose(1, 2).contiguous();  // (B, M, 3)
  std::vector<at::Tensor> outputs;
  outputs.reserve(options_.scales().size());
  for (size_t s = 0; s < options_.scales().size(); ++s) {
    const at::Tensor grouped =
        group_ball(points, points_t, centres, features, options_.scales()[s]);
    outputs.push_back(pool_mlp(mlps_[s], grouped, options_));
  }
  if (outputs.size() == 1) {
    return {centres, outputs[0]};
  }
  return {centres, channels_last_mlp ? join_point_major(outputs) : at::cat(outputs, 1)};
}

}  // namespace dtrain::models
