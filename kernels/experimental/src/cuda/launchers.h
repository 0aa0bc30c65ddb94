// Host launchers of the experimental CUDA FPS kernels (README.md in
// kernels/experimental): plain pointers and an explicit stream, as in
// kernels/src/cuda/launchers.h; the .cu files see no LibTorch, and
// src/furthest_point_sample.cpp translates tensors and ExperimentalFps into
// these calls.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../fastest_choice.h"

namespace dtrain::kernels::cuda::experimental {

// ExperimentalFps (dtrain/kernels/experimental/furthest_point_sample.h) as
// the .cu files see it; its values are checked before they reach here.
enum class Variant { kRegisters, kLeader, kStriped, kMeasured };
// How a thread of the register kernel finds the furthest of its points: a
// pass for the largest distance and another for its lowest index, or a tree
// over indices sorted in the thread (Note [A lane's furthest point by a
// tree] in src/furthest_in_lane.h). The same picks either way; rounds of
// more than one pick take the tree.
enum class Lane { kPass, kTree };
struct Setting {
  Variant variant = Variant::kMeasured;
  Lane lane = Lane::kPass;  // the register kernel's furthest point of a thread
  int round = 1;            // the largest number of picks per round (barrier): 1, 2 or 4
  int threads = 1024;       // the leader kernel's threads a block: 512 or 1024
  int cluster = 0;          // the striped kernel's blocks per cloud; 0: the fewest that fit
};

// Runs `setting` on B clouds of n points (coordinates float32 (B, n, 3);
// out (B, npoint) int64), asynchronously on `stream`. A kernel that cannot
// take n points on this GPU (its range, its shared memory, a cluster the
// GPU cannot hold) throws std::invalid_argument naming it. kMeasured: the
// fastest of the on-chip settings for inputs of this kind (Note [Choosing
// the CUDA FPS kernel by timing it] in furthest_point_sample_fastest.cu).
void launch_furthest_point_sample(const Setting& setting, const float* xyz, std::int64_t batch,
                                  std::int64_t n, std::int64_t npoint, std::int64_t start,
                                  std::int64_t* out, cudaStream_t stream);

// Runs `setting` (a kernel, not kMeasured) with no checks: for settings
// launch_furthest_point_sample has checked for these clouds.
void launch_setting(const Setting& setting, const float* xyz, std::int64_t batch, std::int64_t n,
                    std::int64_t npoint, std::int64_t start, std::int64_t* out,
                    cudaStream_t stream);

// A setting that kMeasured times, and its name in reports (the benchmark's
// impl names).
struct FpsCandidate {
  Setting setting;
  const char* name;
};
// The fastest of `candidates` (settings other than kMeasured, already
// checked for these clouds) for inputs of this kind: on the first input of
// a kind, each candidate runs on it (the same picks), timed; then the
// fastest runs. The kind is the device and B, N and npoint each rounded up
// to a power of two; the candidates must be the same for every input of a
// kind. On a stream being captured into a CUDA graph nothing is timed: the
// kind's remembered choice runs, or the first candidate.
void launch_fps_fastest(const std::vector<FpsCandidate>& candidates, const float* xyz,
                        std::int64_t batch, std::int64_t n, std::int64_t npoint, std::int64_t start,
                        std::int64_t* out, cudaStream_t stream);
// What launch_fps_fastest measured in this process, a kind each.
struct KindMeasured {
  int device;
  std::int64_t batch;  // B, N and npoint rounded up to powers of two
  std::int64_t n;
  std::int64_t npoint;
  detail::MeasuredChoice choice;
};
std::vector<KindMeasured> fps_fastest_measurements();

// The least power of two at least `value` (1 for value <= 1).
inline std::int64_t power_of_two_at_least(std::int64_t value) {
  std::int64_t power = 1;
  while (power < value) {
    power *= 2;
  }
  return power;
}

// The register kernel with its lanes and rounds
// (furthest_point_sample_registers.cu): n <= 8192, and
// fps_registers_shared_bytes(n) of shared memory per block; `round` (1, 2
// or 4) picks per barrier at most (Note [FPS on registers in rounds of
// picks]).
void launch_fps_registers(Lane lane, int round, const float* xyz, std::int64_t batch,
                          std::int64_t n, std::int64_t npoint, std::int64_t start,
                          std::int64_t* out, cudaStream_t stream);
std::size_t fps_registers_shared_bytes(std::int64_t n);

// The register kernel's layout with one warp making each pick
// (furthest_point_sample_leader.cu, Note [FPS with one picking warp]):
// n <= 8192, `threads` 1024 a block with one pick a round, or 512 with
// `round` 1, 2 or 4 picks per barrier at most, and
// fps_leader_shared_bytes(n, threads) of shared memory per block.
void launch_fps_leader(int threads, int round, const float* xyz, std::int64_t batch, std::int64_t n,
                       std::int64_t npoint, std::int64_t start, std::int64_t* out,
                       cudaStream_t stream);
std::size_t fps_leader_shared_bytes(std::int64_t n, int threads);

// The striped kernel (furthest_point_sample_striped.cu): points on chip,
// skipping per chunk of 32 points, up to `round` (1, 2 or 4) picks per
// barrier (Note [FPS on registers in striped chunks], Note [FPS in rounds of
// independent picks]); one block per cloud up to 8192 points, a cluster of
// blocks beyond (Note [FPS on a cluster of blocks]). `cluster` (1, 2, 4 or
// 8; 0: the fewest that hold the cloud) asks for more blocks per cloud than
// the cloud needs, on sm_90 and later; fewer than it needs throws
// std::invalid_argument.
void launch_fps_striped(int round, int cluster, const float* xyz, std::int64_t batch,
                        std::int64_t n, std::int64_t npoint, std::int64_t start, std::int64_t* out,
                        cudaStream_t stream);
std::size_t fps_striped_shared_bytes(std::int64_t n, int cluster);
// The largest cloud the striped kernel takes on a GPU of this compute
// capability: 8192 points in one block; from sm_90 on, up to 65536 in a
// cluster of 2, 4 or 8 blocks (Note [FPS on a cluster of blocks]).
std::int64_t fps_striped_max_points(int compute_major);

}  // namespace dtrain::kernels::cuda::experimental
