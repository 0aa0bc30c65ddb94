// Training-time augmentation of point-cloud batches, as PointNet++ and its
// common reimplementations apply to ModelNet40: a random isotropic scale and
// shift per cloud, clipped Gaussian jitter per point, and optionally a new
// order of the points, a random rotation about the up axis and random point
// dropout.
//
//   auto augment = PointCloudAugmentOptions().rotate_up(true).dropout_max(0.875);
//   at::Tensor batch = augment_point_clouds(points, augment);  // points (B, N, C)
//
// Channels 0-2 are xyz. When C >= 6, channels 3-5 are taken for normals:
// they turn with the rotation but are not scaled, shifted or jittered.
// Other channels are left alone. The input is not modified. An empty batch
// (B = 0) or a batch of empty clouds (N = 0) comes back as a copy, and
// nothing is drawn from the generator.
#pragma once

#include <optional>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/arg.h>

namespace dtrain::datasets {

struct PointCloudAugmentOptions {
  // Each cloud's xyz is multiplied by one factor uniform in [scale_min, scale_max].
  TORCH_ARG(double, scale_min) = 0.8;
  TORCH_ARG(double, scale_max) = 1.25;
  // Then moved by an offset uniform in [-shift, shift] on each axis.
  TORCH_ARG(double, shift) = 0.1;
  // Then each coordinate gets N(0, jitter_sigma^2) noise clipped to +-jitter_clip.
  TORCH_ARG(double, jitter_sigma) = 0.01;
  TORCH_ARG(double, jitter_clip) = 0.05;
  // Rotate each cloud (and its normals) by an angle uniform in [0, 2 pi)
  // about the up axis, first of all steps.
  TORCH_ARG(bool, rotate_up) = false;
  TORCH_ARG(int64_t, up_axis) = 1;  // y, as in ModelNet40's HDF5 files
  // Put each cloud's points in a new random order, first of all steps (the
  // original PointNet++ does; furthest point sampling then starts from
  // another point each epoch).
  TORCH_ARG(bool, shuffle_points) = false;
  // Each cloud draws a ratio uniform in [0, dropout_max] and replaces that
  // share of its points, chosen at random, by its first point (the shape of
  // the batch stays the same). 0 turns dropout off; PointNet++ uses 0.875.
  TORCH_ARG(double, dropout_max) = 0;
};

// Returns an augmented copy of `points` (B, N, C >= 3, floating). Draws from
// `generator` (CPU), or the default CPU generator when none is given.
// The draws are made in the points' type, so scale_min, scale_max,
// jitter_sigma and jitter_clip must be at most its largest finite value, and
// shift at most half of it (e.g. 65504 and 32752 for Half points).
// Throws dtrain::Error naming the option or argument that is out of range.
at::Tensor augment_point_clouds(const at::Tensor& points, const PointCloudAugmentOptions& options,
                                std::optional<at::Generator> generator = std::nullopt);

}  // namespace dtrain::datasets
