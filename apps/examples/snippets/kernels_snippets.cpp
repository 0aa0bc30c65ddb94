// The C++ of docs/kernels.md, compiled with the project so the guide's code
// cannot drift from the API (lint.doc_samples checks the guide shows these
// lines). Not run: the kernels' tests run the same calls against brute force.
#include <ATen/ATen.h>

#include "dtrain/kernels/pointnet2.h"  // link dtrain::kernels

namespace snippets {

// One set abstraction's grouping: 512 centres of each cloud, and the
// features of up to 32 neighbours within 0.2 of each.
at::Tensor group_neighbourhoods(const at::Tensor& xyz, const at::Tensor& features) {
  namespace k = dtrain::kernels;
  // xyz (B, N, 3) float32; features (B, C, N); both on one device, CPU or CUDA
  const at::Tensor centres_idx = k::furthest_point_sample(xyz, 512);             // (B, 512)
  const at::Tensor centres = k::gather_points(xyz.transpose(1, 2), centres_idx)  // (B, 3, 512)
                                 .transpose(1, 2);
  const k::BallQueryResult ball = k::ball_query(centres, xyz, /*radius=*/0.2, /*nsample=*/32);
  return k::group_points(features, ball.idx);  // (B, C, 512, 32), differentiable
}

}  // namespace snippets
