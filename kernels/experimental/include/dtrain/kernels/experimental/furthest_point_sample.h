// Experimental CUDA kernels for furthest point sampling: opt-in, and none of
// them has run on a GPU yet (kernels/experimental/README.md says what a GPU
// run must show before one becomes a default). The default is
// dtrain::kernels::furthest_point_sample (dtrain/kernels/pointnet2.h); link
// dtrain::kernels_experimental only to test or time these beside it.
//
// Contract: the same picks as the default, for the same arguments and
// checks (pointnet2.h: each next index is the unsampled point furthest from
// the sampled set, ties to the lowest index); CUDA tensors only, on the
// current stream. A setting that makes no sense (a round of 3) throws
// c10::Error naming it; one that cannot take the clouds on this GPU (too
// many points, too little shared memory, no thread-block clusters) throws
// std::invalid_argument.
//
// Example:
//   namespace x = dtrain::kernels::experimental;
//   auto idx = x::furthest_point_sample(xyz, 1024,
//                                       x::ExperimentalFps(x::FpsVariant::kLeader).threads(512));
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::kernels::experimental {

enum class FpsVariant {
  // The register kernel (the default's up to 8192 points) with a tree for
  // a thread's furthest point and rounds of 2 or 4 picks per barrier.
  kRegisters,
  // The register kernel's layout where one warp makes each pick and names
  // the warps that must update: 1024 threads of up to 8 points, or 512 of
  // up to 16 with rounds of 1, 2 or 4 picks. Up to 8192 points.
  kLeader,
  // Points dealt out in chunks of 32, skipped chunk by chunk, rounds of 1,
  // 2 or 4 picks; one block per cloud up to 8192 points, and from sm_90 a
  // cluster of 2, 4 or 8 blocks up to 65536 (or on request, `cluster`).
  kStriped,
  // Up to 8192 points, the fastest on this GPU of eight settings of the
  // first two, timed on the first input of each kind (device, and B, N and
  // npoint each rounded up to a power of two) and kept for the process;
  // fps_measurements() reports what it measured.
  kMeasured,
};

// How a thread of the register kernel finds the furthest of its points: a
// pass for the largest distance and another for its lowest index, or a tree
// of pairwise merges. Rounds of more than one pick need the tree.
enum class FpsLane { kPass, kTree };

// A setting; each field applies to the variants named beside it.
//   ExperimentalFps(FpsVariant::kRegisters).lane(FpsLane::kTree).round(4)
struct ExperimentalFps {
  explicit ExperimentalFps(FpsVariant variant = FpsVariant::kMeasured) : variant_(variant) {}
  TORCH_ARG(FpsVariant, variant);
  TORCH_ARG(FpsLane, lane) = FpsLane::kPass;  // kRegisters
  TORCH_ARG(int, round) = 1;                  // kRegisters, kLeader, kStriped: 1, 2 or 4
  TORCH_ARG(int, threads) = 1024;             // kLeader: 1024 (round 1) or 512
  TORCH_ARG(int, cluster) = 0;                // kStriped: blocks per cloud, 1, 2, 4 or 8; 0 fewest
};

// furthest_point_sample (dtrain/kernels/pointnet2.h) on CUDA tensors with an
// experimental setting: xyz (B, N, 3), 1 <= npoint <= N, 0 <= start < N;
// returns (B, npoint) int64.
at::Tensor furthest_point_sample(const at::Tensor& xyz, int64_t npoint, const ExperimentalFps& fps,
                                 int64_t start = 0);

// What FpsVariant::kMeasured measured for one kind of input.
struct FpsMeasurement {
  int device;
  int64_t batch;  // the kind: B, N and npoint, each rounded up to a power of two
  int64_t points;
  int64_t npoint;
  struct Setting {
    std::string name;  // e.g. "registers", "leader_512_round2"
    double seconds;    // its fastest timed run; infinite when not timed
    bool differs;      // its picks differed from the first setting's: not timed, not chosen
  };
  std::vector<Setting> settings;
  std::size_t chosen;  // the position of the setting that runs for this kind
};

// Every kind measured in this process (empty before the first, and
// without CUDA).
std::vector<FpsMeasurement> fps_measurements();

}  // namespace dtrain::kernels::experimental
