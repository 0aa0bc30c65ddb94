// Host launchers of the CUDA kernels. Plain pointers and an explicit
// stream: the .cu files never see at::Tensor (they compile fast and without
// LibTorch), and the *_host.cpp files translate tensors into these calls.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

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
// kAuto (Note [Which FPS kernel]): the register kernel up to 8192 points,
// else the chunk kernel, else (shared memory too small for its chunk table)
// one block per batch element with the points in global memory. The others
// run the kernel they name; one that cannot take the cloud throws
// std::invalid_argument. (FpsKernel of dtrain/kernels/pointnet2.h, which the
// .cu files do not see.)
enum class FpsKernel { kAuto, kRegisters, kChunks, kOneBlockShared, kOneBlockGlobal };
struct FpsPlan {
  FpsKernel kernel;           // never kAuto
  std::size_t scratch_bytes;  // device memory the launch needs (may be 0)
};
FpsPlan plan_furthest_point_sample(FpsKernel requested, std::int64_t batch, std::int64_t n);
void launch_furthest_point_sample(const FpsPlan& plan, const float* xyz, std::int64_t batch,
                                  std::int64_t n, std::int64_t npoint, std::int64_t start,
                                  void* scratch, std::int64_t* out, cudaStream_t stream);

// The register kernel (furthest_point_sample_registers.cu): n <= 8192, and
// fps_registers_shared_bytes(n) of shared memory per block.
void launch_fps_registers(const float* xyz, std::int64_t batch, std::int64_t n, std::int64_t npoint,
                          std::int64_t start, std::int64_t* out, cudaStream_t stream);
std::size_t fps_registers_shared_bytes(std::int64_t n);

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
