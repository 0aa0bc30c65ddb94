// PointNet++ point operations: sampling, neighbourhoods, grouping and
// interpolation, on CPU (multi-threaded) and CUDA behind one function per op.
//
// Contract, for every function here:
//  - Inputs are checked once, here; a bad input throws c10::Error whose
//    message names the argument, its shape/dtype/value and what was expected.
//  - All tensors of one call must live on the same device; the work runs
//    there (CUDA: asynchronously on the current stream, like any ATen op).
//  - Non-contiguous inputs are accepted (made contiguous internally); every
//    tensor must be strided (dense): sparse and other layouts are refused.
//    One exception, for speed: on the CPU, gather_points and group_points
//    read features whose channels are innermost (features.transpose(1, 2)
//    contiguous) as they lie, and return results in that layout
//    (group_points: channels-last). Values are the same in either layout.
//  - Zero sizes are accepted where the op is defined (an empty batch B = 0,
//    no queries, C = 0 channels, ...): the outputs and gradients are empty
//    tensors of the documented shapes.
//  - Coordinates (xyz, new_xyz, unknown, known) may be float32, float64,
//    float16 or bfloat16; they are converted to float32 and every distance is
//    computed as dx*dx + dy*dy + dz*dz in float32 in that order (no FMA), so
//    CPU and CUDA return exactly the same indices.
//  - Feature ops (gather_points, group_points, three_interpolate) keep the
//    dtype of `features` (float32, float64, float16, bfloat16) and accumulate
//    in float32 (float64 for float64 features).
//  - Index tensors are int64. Out-of-range indices throw on CPU; on CUDA they
//    are not checked (that would synchronise) and read as zero features /
//    drop their gradient.
//  - gather_points, group_points and three_interpolate are differentiable
//    (once: their backward is not itself differentiable). See
//    docs/kernels.md for the exact semantics and the deterministic mode.
//
// Example:
//   auto idx = dtrain::kernels::furthest_point_sample(xyz, 512);      // (B, 512)
//   auto centres = dtrain::kernels::gather_points(xyz.transpose(1, 2), idx);
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <cstdint>

namespace dtrain::kernels {

// How the backward passes of gather_points, group_points and
// three_interpolate add gradients that land on the same source point.
enum class ScatterMode {
  // CUDA: float atomics (fast; the summation order, hence the last bits,
  // may change from run to run). CPU: same as kDeterministic.
  kAtomic,
  // Bitwise repeatable: every output element is summed by one thread in
  // increasing index order (CUDA: a stable radix sort of the indices, then a
  // segmented sum; CPU: one thread owns each (batch, channel) row).
  kDeterministic,
};

// The mode the autograd backward passes use: kDeterministic when
// set_deterministic_backward(true) was called or when
// at::globalContext().deterministicAlgorithms() is on
// (torch.use_deterministic_algorithms(True)), else kAtomic. Read at backward
// time. Thread-safe.
void set_deterministic_backward(bool deterministic);
ScatterMode backward_scatter_mode();

// Which kernel samples CUDA tensors. kAuto: the register kernel up to 8192
// points a cloud, else the chunk kernel, else (a GPU whose shared memory
// cannot hold the chunk table) one block per cloud with the running
// distances in global memory; each has passed the GPU tests on a GPU
// (docs/design/kernels.md, "CUDA FPS"). The others run the kernel they name, for
// tests and benchmarks: kOneBlockShared and kOneBlockGlobal are the plain
// one-block-per-cloud kernel, points and distances in shared or in global
// memory. One that cannot take the clouds on this GPU throws.
enum class FpsKernel { kAuto, kRegisters, kChunks, kOneBlockShared, kOneBlockGlobal };

// Which loop samples CPU tensors. kAuto: the spatial kernel for clouds of
// 2048 points or more with enough picks to repay sorting them, else the
// plain loop, a cloud per thread, or split across the threads when the
// clouds are fewer than the threads and large. The others force a loop
// (kSplit on at least two threads; kSpatial takes at most 2^31 - 1 points).
enum class CpuFpsPath { kAuto, kPlain, kSpatial, kSplit };

// How furthest_point_sample runs; every choice gives the same picks.
//   FpsOptions().cuda_kernel(FpsKernel::kChunks).cpu_path(CpuFpsPath::kPlain)
struct FpsOptions {
  TORCH_ARG(FpsKernel, cuda_kernel) = FpsKernel::kAuto;
  TORCH_ARG(CpuFpsPath, cpu_path) = CpuFpsPath::kAuto;
};

// Furthest point sampling.
//
//   xyz:     (B, N, 3) coordinates, N >= 1
//   npoint:  1 <= npoint <= N
//   start:   0 <= start < N, the first index of every batch element
//   returns  (B, npoint) int64 indices into N
//
// Each next index is the unsampled point whose squared distance to the
// sampled set is largest; ties go to the lowest index. No point is skipped
// (points at the origin are sampled like any other), and no index repeats:
// once every remaining point coincides with a sampled one, the lowest
// unsampled indices follow in order.
at::Tensor furthest_point_sample(const at::Tensor& xyz, int64_t npoint, int64_t start = 0,
                                 const FpsOptions& options = {});

// out[b][c][m] = features[b][c][idx[b][m]].
//
//   features: (B, C, N);  idx: (B, M) int64 in [0, N)
//   returns   (B, C, M), features' dtype; differentiable w.r.t. features.
at::Tensor gather_points(const at::Tensor& features, const at::Tensor& idx);

struct BallQueryResult {
  at::Tensor idx;    // (B, M, nsample) int64
  at::Tensor count;  // (B, M) int64: number of points found, 0..nsample
};

// Ball query: for each centre new_xyz[b][m], the first `nsample` points of
// xyz (in index order) with squared distance < radius^2 (radius squared in
// float32). Rows with 0 < count < nsample are padded with their first
// neighbour; rows with count == 0 are all zeros (an empty ball is visible
// only through `count`).
//
// A point with a NaN distance is in no ball.
//
//   new_xyz: (B, M, 3); xyz: (B, N, 3); nsample >= 1;
//   radius > 0 whose float32 square is positive and finite (radius between
//   about 2.7e-23 and 1.8e19: a smaller one would square to 0 and find
//   nothing, not even the centre itself)
BallQueryResult ball_query(const at::Tensor& new_xyz, const at::Tensor& xyz, double radius,
                           int64_t nsample);

struct KnnResult {
  at::Tensor idx;    // (B, M, k) int64
  at::Tensor dist2;  // (B, M, k) float32 squared distances
};

// The k nearest points of xyz for each query, by ascending squared distance,
// ties to the lowest index. A squared distance that is NaN (a NaN coordinate
// in the point or the query) ranks as +inf: after every finite distance, and
// by lowest index among the NaN and +inf ones. dist2 keeps the NaN, the rows
// stay sorted (reading NaN as +inf), and a NaN point is returned only when
// fewer than k points have a finite distance. Same rule in three_nn.
//
//   new_xyz: (B, M, 3); xyz: (B, N, 3); 1 <= k <= N
KnnResult knn(const at::Tensor& new_xyz, const at::Tensor& xyz, int64_t k);

// out[b][c][m][s] = features[b][c][idx[b][m][s]].
//
//   features: (B, C, N);  idx: (B, M, K) int64 in [0, N)
//   returns   (B, C, M, K), features' dtype; differentiable w.r.t. features.
//   Contiguous, or channels-last for CPU features whose channels are
//   innermost (the layout a following 1x1 convolution runs fastest on).
at::Tensor group_points(const at::Tensor& features, const at::Tensor& idx);

struct ThreeNnResult {
  at::Tensor dist2;  // (B, n, 3) float32 squared distances (not their square roots)
  at::Tensor idx;    // (B, n, 3) int64
};

// The three nearest `known` points of every `unknown` point, ascending,
// ties to the lowest index; a NaN squared distance ranks as +inf (see knn).
//
//   unknown: (B, n, 3); known: (B, m, 3) with m >= 3
ThreeNnResult three_nn(const at::Tensor& unknown, const at::Tensor& known);

// out[b][c][i] = sum_j weight[b][i][j] * features[b][c][idx[b][i][j]], j = 0, 1, 2.
//
//   features: (B, C, m);  idx: (B, n, 3) int64 in [0, m);  weight: (B, n, 3)
//   floating, used in float32 (float64 with float64 features) whatever the
//   features' dtype: float16 or bfloat16 features with float32 weights (as
//   under mixed precision) are interpolated with the exact weights and
//   rounded once
//   returns   (B, C, n) in features' dtype; differentiable w.r.t. features
//   and weight.
at::Tensor three_interpolate(const at::Tensor& features, const at::Tensor& idx,
                             const at::Tensor& weight);

// The backward passes, for callers that manage gradients themselves (and
// for tests). They check their inputs like the forward functions.
//
// grad_features[b][c][n] = sum over m with idx[b][m] == n of grad_out[b][c][m].
//   grad_out: (B, C, M); idx: (B, M); returns (B, C, n) in grad_out's dtype.
at::Tensor gather_points_backward(const at::Tensor& grad_out, const at::Tensor& idx, int64_t n,
                                  ScatterMode mode);
//   grad_out: (B, C, M, K); idx: (B, M, K); returns (B, C, n).
at::Tensor group_points_backward(const at::Tensor& grad_out, const at::Tensor& idx, int64_t n,
                                 ScatterMode mode);

struct ThreeInterpolateGrads {
  at::Tensor features;  // (B, C, m)
  at::Tensor weight;    // (B, n, 3), weight's dtype
};
//   grad_out: (B, C, n); features (B, C, m) as given to the forward; idx, weight (B, n, 3).
ThreeInterpolateGrads three_interpolate_backward(const at::Tensor& grad_out,
                                                 const at::Tensor& features, const at::Tensor& idx,
                                                 const at::Tensor& weight, ScatterMode mode);

}  // namespace dtrain::kernels
