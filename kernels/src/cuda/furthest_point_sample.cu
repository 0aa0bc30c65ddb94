// Furthest point sampling: the choice of kernel (Note [Which FPS kernel]),
// and the plain one-block-per-cloud kernel, for a GPU whose shared memory is
// too small for the chunk table, and as the benchmarks' baseline.
//
// Note [Which FPS kernel]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Up to 8192 points, the register kernel (Note [FPS on registers with
// spatial skipping]); beyond, the chunk kernel (Note [FPS in spatial
// chunks]); where shared memory cannot hold the chunk table, one block per
// cloud with the running distances in global memory. Each of them passed
// every GPU test in the last run on a GPU; a default is only code that has
// run where it runs. Faster kernels that have not are opt-in, in
// kernels/experimental, until a GPU run shows them passing (its README says
// what that run must show).
// One block per batch element loops over the npoint picks. Each pick, every
// thread updates its strided share of dist[j] = min(dist[j], d(j, last
// pick)) and keeps its own first maximum; warp shuffles then shared memory
// reduce (value, index) to the block's maximum with the lowest index (Note
// [FPS distance] in src/cpu/furthest_point_sample.cpp; sampled points hold
// dist = -1).
//
//   xyz   [b][j][x y z]  float32, global
//   kShared: shared memory holds x[n] y[n] z[n] dist[n] (16 bytes a point)
//   else:    dist lives in dist_scratch[b][n] (global), points read from xyz

#include <stdexcept>
#include <string>

#include "cuda_check.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

constexpr unsigned int kWarp = 32;
constexpr unsigned int kMaxThreads = 1024;

struct Candidate {
  float value;
  std::int64_t index;
};

__device__ inline bool better(const Candidate& a, const Candidate& b) {
  return a.value > b.value || (a.value == b.value && a.index < b.index);
}

__device__ inline Candidate warp_best(Candidate c) {
  for (unsigned int offset = kWarp / 2; offset > 0; offset /= 2) {
    const Candidate other{__shfl_down_sync(0xffffffffu, c.value, offset),
                          __shfl_down_sync(0xffffffffu, c.index, offset)};
    if (better(other, c)) {
      c = other;
    }
  }
  return c;
}

template <bool kShared>
__global__ void __launch_bounds__(kMaxThreads)
    furthest_point_sample_kernel(const float* __restrict__ xyz, std::int64_t n, std::int64_t npoint,
                                 std::int64_t start, float* __restrict__ dist_scratch,
                                 std::int64_t* __restrict__ out) {
  extern __shared__ float shared_points[];
  __shared__ float warp_value[kMaxThreads / kWarp];
  __shared__ std::int64_t warp_index[kMaxThreads / kWarp];
  __shared__ std::int64_t selected_shared;

  const std::int64_t b = blockIdx.x;
  const float* points = xyz + b * n * 3;
  float* xs = shared_points;
  float* ys = xs + n;
  float* zs = ys + n;
  float* dist = kShared ? zs + n : dist_scratch + b * n;
  std::int64_t* picks = out + b * npoint;

  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    if constexpr (kShared) {
      xs[j] = points[3 * j];
      ys[j] = points[3 * j + 1];
      zs[j] = points[3 * j + 2];
    }
    dist[j] = j == start ? -1.0f : __int_as_float(0x7f800000);  // +inf; sampled: -1
  }
  if (threadIdx.x == 0) {
    picks[0] = start;
  }
  __syncthreads();

  const unsigned int lane = threadIdx.x % kWarp;
  const unsigned int warp = threadIdx.x / kWarp;
  const unsigned int warps = (blockDim.x + kWarp - 1) / kWarp;
  std::int64_t selected = start;
  for (std::int64_t i = 1; i < npoint; ++i) {
    float cx, cy, cz;
    if constexpr (kShared) {
      cx = xs[selected];
      cy = ys[selected];
      cz = zs[selected];
    } else {
      cx = points[3 * selected];
      cy = points[3 * selected + 1];
      cz = points[3 * selected + 2];
    }
    Candidate best{-2.0f, n};
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      float px, py, pz;
      if constexpr (kShared) {
        px = xs[j];
        py = ys[j];
        pz = zs[j];
      } else {
        px = points[3 * j];
        py = points[3 * j + 1];
        pz = points[3 * j + 2];
      }
      const float d = squared_distance(cx, cy, cz, px, py, pz);
      const float current = d < dist[j] ? d : dist[j];
      dist[j] = current;
      if (current > best.value) {  // j increases: first maximum per thread
        best = {current, j};
      }
    }
    best = warp_best(best);
    if (lane == 0) {
      warp_value[warp] = best.value;
      warp_index[warp] = best.index;
    }
    __syncthreads();
    if (warp == 0) {
      best = lane < warps ? Candidate{warp_value[lane], warp_index[lane]} : Candidate{-2.0f, n};
      best = warp_best(best);
      if (lane == 0) {
        selected_shared = best.index;
        picks[i] = best.index;
        dist[best.index] = -1.0f;
      }
    }
    __syncthreads();
    selected = selected_shared;
  }
}

void launch_one_block_per_cloud(bool shared, const float* xyz, std::int64_t batch, std::int64_t n,
                                std::int64_t npoint, std::int64_t start, float* dist_scratch,
                                std::int64_t* out, cudaStream_t stream) {
  std::int64_t threads = n < kMaxThreads ? n : kMaxThreads;
  threads = (threads + kWarp - 1) / kWarp * kWarp;
  const std::int64_t shared_bytes = 4 * n * static_cast<std::int64_t>(sizeof(float));
  if (shared) {
    const auto kernel = furthest_point_sample_kernel<true>;
    DTRAIN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(shared_bytes)));
    kernel<<<static_cast<unsigned int>(batch), static_cast<unsigned int>(threads),
             static_cast<std::size_t>(shared_bytes), stream>>>(xyz, n, npoint, start, dist_scratch,
                                                               out);
  } else {
    furthest_point_sample_kernel<false>
        <<<static_cast<unsigned int>(batch), static_cast<unsigned int>(threads), 0, stream>>>(
            xyz, n, npoint, start, dist_scratch, out);
  }
  DTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace

FpsPlan plan_furthest_point_sample(FpsKernel requested, std::int64_t batch, std::int64_t n) {
  constexpr std::int64_t kRegisterPoints = 8192;
  const std::int64_t limit = dynamic_shared_limit();
  const bool fits_shared = 4 * n * static_cast<std::int64_t>(sizeof(float)) <= limit;
  const bool fits_registers =
      n <= kRegisterPoints && static_cast<std::int64_t>(fps_registers_shared_bytes(n)) <= limit;
  const bool fits_chunks = static_cast<std::int64_t>(fps_chunks_shared_bytes(n)) <= limit;
  FpsKernel kernel = requested;
  if (kernel == FpsKernel::kAuto) {
    kernel = fits_registers ? FpsKernel::kRegisters
                            : (fits_chunks ? FpsKernel::kChunks : FpsKernel::kOneBlockGlobal);
  }
  if (kernel == FpsKernel::kRegisters && !fits_registers) {
    throw std::invalid_argument("FpsKernel::kRegisters: the register kernel takes at most " +
                                std::to_string(kRegisterPoints) +
                                " points (and their shared memory), got " + std::to_string(n));
  }
  if (kernel == FpsKernel::kChunks && !fits_chunks) {
    throw std::invalid_argument("FpsKernel::kChunks: the chunk table of " + std::to_string(n) +
                                " points does not fit in shared memory");
  }
  if (kernel == FpsKernel::kOneBlockShared && !fits_shared) {
    throw std::invalid_argument("FpsKernel::kOneBlockShared: " + std::to_string(n) +
                                " points do not fit in shared memory");
  }
  const auto points = static_cast<std::size_t>(batch * n);
  switch (kernel) {
    case FpsKernel::kChunks:  // sorted (x, y, z, distance) and original index per point
      return {kernel, points * (sizeof(float) * 4 + sizeof(int))};
    case FpsKernel::kOneBlockGlobal:  // running distances
      return {kernel, points * sizeof(float)};
    default:
      return {kernel, 0};
  }
}

void launch_furthest_point_sample(const FpsPlan& plan, const float* xyz, std::int64_t batch,
                                  std::int64_t n, std::int64_t npoint, std::int64_t start,
                                  void* scratch, std::int64_t* out, cudaStream_t stream) {
  if (batch == 0) {
    return;
  }
  switch (plan.kernel) {
    case FpsKernel::kAuto:
      throw std::invalid_argument("furthest_point_sample: a plan names its kernel, not kAuto");
    case FpsKernel::kRegisters:
      return launch_fps_registers(xyz, batch, n, npoint, start, out, stream);
    case FpsKernel::kChunks:
      return launch_fps_chunks(xyz, batch, n, npoint, start, scratch, out, stream);
    case FpsKernel::kOneBlockShared:
    case FpsKernel::kOneBlockGlobal:
      return launch_one_block_per_cloud(plan.kernel == FpsKernel::kOneBlockShared, xyz, batch, n,
                                        npoint, start, static_cast<float*>(scratch), out, stream);
  }
}

}  // namespace dtrain::kernels::cuda
