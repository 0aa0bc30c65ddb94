// Host launchers of the CUDA kernels. Plain pointers and an explicit
// stream: the .cu files never see at::Tensor (they compile fast and without
// LibTorch), and the *_host.cpp files translate tensors into these calls.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::kernels::cuda {

// The floating dtypes a kernel can be instantiated for.
enum class FloatType { kFloat32, kFloat64, kFloat16, kBFloat16 };

// Adds to *counter the number of rows of logits (rows x cols, row-major)
// whose argmax equals labels[row]. Asynchronous on `stream`.
void launch_count_correct(FloatType type, const void* logits, const std::int64_t* labels,
                          std::int64_t rows, std::int64_t cols, unsigned long long* counter,
                          cudaStream_t stream);

// ---- PointNet++ point ops. Coordinates are float32 (B, N, 3) row-major;
// indices int64; features (B, C, N) row-major. All asynchronous on `stream`.

// Furthest point sampling (src/cuda/furthest_point_sample.cu), in two
// steps so that the caller allocates the scratch the chosen kernel needs.
// The plan chooses the kernel (Note [Which FPS kernel]): up to 8192 points,
// the fastest of the kernels that hold a cloud on chip, measured on the
// first input of each kind (Note [Choosing the CUDA FPS kernel by timing
// it]; the register kernel with DTRAIN_CUDA_FPS_MEASURE=off); the striped
// kernel on a cluster of blocks up to 65536 (sm_90 and later), else the
// chunk kernel, else (shared memory too small for its chunk table) one block
// per batch element with the points in global memory.
// DTRAIN_CUDA_FPS=registers, leader, striped, chunks, shared or global
// forces a kernel (tests and benchmarks); DTRAIN_CUDA_FPS_THREADS=512 or
// 1024 sets the leader kernel's block (default 1024 for one pick a round,
// 512 for more, which 1024 threads cannot take);
// DTRAIN_CUDA_FPS_LANE=pass or tree sets how
// the register kernel's threads find their furthest point (default: pass
// for one pick a round, tree for more, which need it);
// DTRAIN_CUDA_FPS_ROUND=1, 2 or 4 sets the largest number of picks per
// round (barrier), for the register and leader kernels (default 1) and the
// striped kernel (default 4); DTRAIN_CUDA_FPS_CLUSTER=1, 2, 4 or 8 sets the
// striped kernel's blocks per cloud
// (default: the fewest that hold the cloud). A forced kernel that cannot
// take the cloud, or an unknown value, throws std::invalid_argument. Any of
// these settings but DTRAIN_CUDA_FPS=auto turns the measuring off.
enum class FpsKernel { kFastest, kRegisters, kLeader, kStriped, kChunks, kShared, kGlobal };
// How a thread of the register kernel finds the furthest of its points: a
// pass for the largest distance and another for its lowest index, or a tree
// over indices sorted in the thread (Note [A lane's furthest point by a
// tree] in src/furthest_in_lane.h). The same picks either way; rounds of
// more than one pick take the tree.
enum class FpsLane { kPass, kTree };
struct FpsPlan {
  FpsKernel kernel;
  std::size_t scratch_bytes;      // device memory the launch needs (may be 0)
  int round = 1;                  // the largest number of picks per round (barrier)
  int cluster = 0;                // the striped kernel's blocks per cloud; 0: the fewest that fit
  FpsLane lane = FpsLane::kPass;  // the register kernel's furthest point of a thread
  int threads = 0;                // the leader kernel's threads a block (512 or 1024)
};
FpsPlan plan_furthest_point_sample(std::int64_t batch, std::int64_t n);
void launch_furthest_point_sample(const FpsPlan& plan, const float* xyz, std::int64_t batch,
                                  std::int64_t n, std::int64_t npoint, std::int64_t start,
                                  void* scratch, std::int64_t* out, cudaStream_t stream);

// A setting of an on-chip kernel that kFastest measures, and its name in
// reports (the benchmark's impl names).
struct FpsCandidate {
  FpsPlan plan;
  const char* name;
};
// The fastest of `candidates` (which need no scratch) for inputs of this
// kind (furthest_point_sample_fastest.cu, Note [Choosing the CUDA FPS
// kernel by timing it]): on the first input of a kind, each candidate runs
// on it (the same picks), timed; then the fastest runs. The kind is the
// device and B, N and npoint each rounded up to a power of two; the
// candidates must be the same for every input of a kind. On a stream being
// captured into a CUDA graph nothing is timed: the kind's remembered choice
// runs, or the first candidate.
void launch_fps_fastest(const std::vector<FpsCandidate>& candidates, const float* xyz,
                        std::int64_t batch, std::int64_t n, std::int64_t npoint, std::int64_t start,
                        std::int64_t* out, cudaStream_t stream);
// What has been measured in this process, a line a kind: "cuda:0 B<=32
// N<=8192 npoint<=1024: leader_512_round2 (0.401 ms; registers 0.752, ...)".
std::vector<std::string> fps_fastest_choices();

// The register kernel (furthest_point_sample_registers.cu): n <= 8192, and
// fps_registers_shared_bytes(n) of shared memory per block; `round` (1, 2
// or 4) picks per barrier at most (Note [FPS on registers in rounds of
// picks]).
void launch_fps_registers(FpsLane lane, int round, const float* xyz, std::int64_t batch,
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
// std::invalid_argument. The plan takes it from 8193 to 65536 points.
void launch_fps_striped(int round, int cluster, const float* xyz, std::int64_t batch,
                        std::int64_t n, std::int64_t npoint, std::int64_t start, std::int64_t* out,
                        cudaStream_t stream);
std::size_t fps_striped_shared_bytes(std::int64_t n, int cluster);
// Whether this GPU can launch the striped kernel for clouds of n points with
// `round` picks per round on `cluster` blocks per cloud (0: the fewest): one
// block always can (given fps_striped_shared_bytes); a cluster needs code for
// compute_90 or later and an SM set that holds one (a small MIG slice may
// not). The plan asks before choosing it; answers are kept per device.
bool fps_striped_runs_here(std::int64_t n, int round, int cluster);
// The largest cloud the striped kernel takes on a GPU of this compute
// capability: 8192 points in one block; from sm_90 on, up to 65536 in a
// cluster of 2, 4 or 8 blocks (Note [FPS on a cluster of blocks]).
std::int64_t fps_striped_max_points(int compute_major);

// The chunk kernel (furthest_point_sample_chunks.cu): any n, with
// fps_chunks_shared_bytes(n) of shared memory per block and batch * n * 20
// bytes of scratch.
void launch_fps_chunks(const float* xyz, std::int64_t batch, std::int64_t n, std::int64_t npoint,
                       std::int64_t start, void* scratch, std::int64_t* out, cudaStream_t stream);
std::size_t fps_chunks_shared_bytes(std::int64_t n);

// Ball query (ball_query.cu): idx (B, M, nsample), count (B, M).
void launch_ball_query(const float* new_xyz, const float* xyz, std::int64_t batch, std::int64_t m,
                       std::int64_t n, float radius2, std::int64_t nsample, std::int64_t* idx,
                       std::int64_t* count, cudaStream_t stream);

// k nearest neighbours (knn.cu): idx and dist2 (B, M, k).
void launch_knn(const float* new_xyz, const float* xyz, std::int64_t batch, std::int64_t m,
                std::int64_t n, std::int64_t k, std::int64_t* idx, float* dist2,
                cudaStream_t stream);

// Three nearest neighbours (three_nn.cu): dist2 and idx (B, n, 3); m >= 3.
void launch_three_nn(const float* unknown, const float* known, std::int64_t batch, std::int64_t n,
                     std::int64_t m, float* dist2, std::int64_t* idx, cudaStream_t stream);

// out (B, C, L) = features (B, C, n) gathered by idx (B, L) (gather_group.cu).
void launch_gather_points(FloatType type, const void* features, const std::int64_t* idx,
                          std::int64_t batch, std::int64_t channels, std::int64_t n, std::int64_t l,
                          void* out, cudaStream_t stream);

// Bytes of scratch the deterministic scatter needs for idx (B, L) into n points.
std::size_t scatter_add_points_scratch_bytes(std::int64_t batch, std::int64_t l, std::int64_t n);

// Note [scatter layout] (src/dispatch.h): grad_acc (B, C, n) of the
// accumulation type (float, or double for kFloat64) receives
// sum weight[b][l] * grad_out[b][c][l / group]; weight, of the accumulation
// type too, may be null (1).
// Atomic mode adds into grad_acc, which must be zeroed; deterministic mode
// overwrites it and needs `scratch` of scatter_add_points_scratch_bytes().
void launch_scatter_add_points(FloatType type, const void* grad_out, const std::int64_t* idx,
                               const void* weight, std::int64_t batch, std::int64_t channels,
                               std::int64_t out_len, std::int64_t l, std::int64_t n, void* grad_acc,
                               bool deterministic, void* scratch, std::size_t scratch_bytes,
                               cudaStream_t stream);

// three_interpolate (interpolate.cu): out (B, C, n) from features (B, C, m),
// idx and weight (B, 3n), weight of the accumulation type.
void launch_three_interpolate(FloatType type, const void* features, const std::int64_t* idx,
                              const void* weight, std::int64_t batch, std::int64_t channels,
                              std::int64_t m, std::int64_t n, void* out, cudaStream_t stream);

// grad_weight (B, 3n), of the accumulation type,
//   = sum_c grad_out[b][c][l / 3] * features[b][c][idx[b][l]].
void launch_three_interpolate_weight_grad(FloatType type, const void* grad_out,
                                          const void* features, const std::int64_t* idx,
                                          std::int64_t batch, std::int64_t channels, std::int64_t m,
                                          std::int64_t n, void* grad_weight, cudaStream_t stream);

}  // namespace dtrain::kernels::cuda
