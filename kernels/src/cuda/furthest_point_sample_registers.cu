// Furthest point sampling for clouds of up to 8192 points, latency-bound
// and tuned for it (Note [FPS on registers and clusters]).
//
// Note [FPS on registers and clusters]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// FPS makes npoint dependent picks; each pick is a min-update of every
// point's distance and an argmax over the cloud. With one block per cloud
// (furthest_point_sample.cu) a pick costs shared-memory loads of every
// point, two block barriers and a two-level reduction, and a batch of 32
// clouds keeps only 32 SMs busy. Here:
//  - 1024 threads per cloud, each holding up to 8 points (coordinates and
//    running distance) in registers for the whole run;
//  - on sm_90 the cloud's 1024 threads are a thread-block cluster of
//    `kClusterBlocks` blocks on as many SMs (chosen so batch * blocks fills
//    the GPU), which share shared memory;
//  - one barrier per pick: each warp reduces its points with butterfly
//    shuffles, lane 0 writes (value, index, x, y, z) to a double-buffered
//    slot, the cluster (or block) syncs, and then every warp reads all 32
//    slots of the cloud and reduces them itself, so every thread learns the
//    pick and its coordinates without a second barrier. The buffers
//    alternate between picks, so a fast warp's next write never lands in a
//    slot another warp is still reading;
//  - ties as everywhere: largest distance, then lowest index; distances with
//    the rounded arithmetic of Note [FPS distance] (squared_distance), so
//    the picks equal the CPU kernel's.
// Thread t of block r holds points first + s * 1024 (s < kPerThread) with
// first = r * blockDim + t: indices grow with s, so a thread's first
// maximum is its lowest index.

#include <cooperative_groups.h>

#include "cuda_check.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

namespace cg = cooperative_groups;

constexpr unsigned int kWarp = 32;
constexpr unsigned int kCloudThreads = 1024;
constexpr unsigned int kSlots = kCloudThreads / kWarp;  // one per warp of the cloud

struct Pick {
  float value;
  std::int64_t index;
  float x, y, z;
};

__device__ inline bool better(const Pick& a, const Pick& b) {
  return a.value > b.value || (a.value == b.value && a.index < b.index);
}

// Butterfly reduction: every lane ends with the warp's best.
__device__ inline Pick warp_best_everywhere(Pick c) {
  for (unsigned int offset = kWarp / 2; offset > 0; offset /= 2) {
    const Pick other{
        __shfl_xor_sync(0xffffffffu, c.value, offset),
        __shfl_xor_sync(0xffffffffu, c.index, offset), __shfl_xor_sync(0xffffffffu, c.x, offset),
        __shfl_xor_sync(0xffffffffu, c.y, offset), __shfl_xor_sync(0xffffffffu, c.z, offset)};
    if (better(other, c)) {
      c = other;
    }
  }
  return c;
}

// The barrier and the slot reads of one cloud: a cluster on sm_90, else one
// block (kClusterBlocks == 1).
template <unsigned int kClusterBlocks>
struct CloudGroup {
  __device__ static unsigned int block_rank() {
    if constexpr (kClusterBlocks == 1) {
      return 0;
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      return cg::this_cluster().block_rank();
#else
      __trap();
      return 0;
#endif
    }
  }
  __device__ static void sync() {
    if constexpr (kClusterBlocks == 1) {
      __syncthreads();
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      cg::this_cluster().sync();
#else
      __trap();
#endif
    }
  }
  // Slot `slot` of block `rank` of the cloud.
  __device__ static Pick read(Pick* slots, unsigned int rank, unsigned int slot) {
    if constexpr (kClusterBlocks == 1) {
      return slots[slot];
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      return *cg::this_cluster().map_shared_rank(slots + slot, rank);
#else
      __trap();
      return Pick{};
#endif
    }
  }
};

template <int kPerThread, unsigned int kClusterBlocks>
__global__ void __launch_bounds__(kCloudThreads / kClusterBlocks)
    fps_registers_kernel(const float* __restrict__ xyz, std::int64_t n, std::int64_t npoint,
                         std::int64_t start, std::int64_t* __restrict__ out) {
  using Group = CloudGroup<kClusterBlocks>;
  constexpr unsigned int kThreads = kCloudThreads / kClusterBlocks;
  constexpr unsigned int kWarpsPerBlock = kThreads / kWarp;
  __shared__ Pick slots[2][kWarpsPerBlock];

  const unsigned int rank = Group::block_rank();
  const std::int64_t b = blockIdx.x / kClusterBlocks;
  const float* points = xyz + b * n * 3;
  std::int64_t* picks = out + b * npoint;
  const std::int64_t first = static_cast<std::int64_t>(rank) * kThreads + threadIdx.x;
  const bool writer = rank == 0 && threadIdx.x == 0;

  float px[kPerThread], py[kPerThread], pz[kPerThread], dist[kPerThread];
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    const std::int64_t j = first + static_cast<std::int64_t>(s) * kCloudThreads;
    if (j < n) {
      px[s] = points[3 * j];
      py[s] = points[3 * j + 1];
      pz[s] = points[3 * j + 2];
      dist[s] = j == start ? -1.0f : __int_as_float(0x7f800000);  // +inf; sampled: -1
    } else {
      px[s] = py[s] = pz[s] = 0.0f;
      dist[s] = -2.0f;  // padding: below every real point, never picked
    }
  }
  if (writer) {
    picks[0] = start;
  }
  float cx = points[3 * start];
  float cy = points[3 * start + 1];
  float cz = points[3 * start + 2];

  const unsigned int lane = threadIdx.x % kWarp;
  const unsigned int warp = threadIdx.x / kWarp;
  for (std::int64_t i = 1; i < npoint; ++i) {
    Pick best{-2.0f, n, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int s = 0; s < kPerThread; ++s) {
      const float d = squared_distance(cx, cy, cz, px[s], py[s], pz[s]);
      const float current = d < dist[s] ? d : dist[s];
      dist[s] = current;
      if (current > best.value) {  // s increases: first maximum per thread
        best = {current, first + static_cast<std::int64_t>(s) * kCloudThreads, px[s], py[s], pz[s]};
      }
    }
    best = warp_best_everywhere(best);
    Pick* buffer = slots[i & 1];
    if (lane == 0) {
      buffer[warp] = best;
    }
    Group::sync();
    // Lane l reads slot l of the cloud: block l / kWarpsPerBlock, warp l % kWarpsPerBlock.
    const Pick pick =
        warp_best_everywhere(Group::read(buffer, lane / kWarpsPerBlock, lane % kWarpsPerBlock));
#pragma unroll
    for (int s = 0; s < kPerThread; ++s) {
      if (first + static_cast<std::int64_t>(s) * kCloudThreads == pick.index) {
        dist[s] = -1.0f;
      }
    }
    if (writer) {
      picks[i] = pick.index;
    }
    cx = pick.x;
    cy = pick.y;
    cz = pick.z;
  }
  // A block's slots must outlive the other blocks' last reads of them.
  if constexpr (kClusterBlocks > 1) {
    Group::sync();
  }
}

template <int kPerThread, unsigned int kClusterBlocks>
void launch(const float* xyz, std::int64_t batch, std::int64_t n, std::int64_t npoint,
            std::int64_t start, std::int64_t* out, cudaStream_t stream) {
  static_assert(kClusterBlocks * (kCloudThreads / kClusterBlocks) == kCloudThreads);
  static_assert(kSlots == kWarp, "one warp reads every slot of the cloud");
  const auto kernel = fps_registers_kernel<kPerThread, kClusterBlocks>;
  const dim3 grid(static_cast<unsigned int>(batch * kClusterBlocks));
  const dim3 block(kCloudThreads / kClusterBlocks);
  if constexpr (kClusterBlocks == 1) {
    kernel<<<grid, block, 0, stream>>>(xyz, n, npoint, start, out);
  } else {
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = 0;
    config.stream = stream;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = kClusterBlocks;
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    DTRAIN_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, xyz, n, npoint, start, out));
  }
  DTRAIN_CUDA_CHECK_LAUNCH();
}

template <int kPerThread>
void launch_with_cluster(unsigned int cluster_blocks, const float* xyz, std::int64_t batch,
                         std::int64_t n, std::int64_t npoint, std::int64_t start, std::int64_t* out,
                         cudaStream_t stream) {
  switch (cluster_blocks) {
    case 8:
      return launch<kPerThread, 8>(xyz, batch, n, npoint, start, out, stream);
    case 4:
      return launch<kPerThread, 4>(xyz, batch, n, npoint, start, out, stream);
    case 2:
      return launch<kPerThread, 2>(xyz, batch, n, npoint, start, out, stream);
    default:
      return launch<kPerThread, 1>(xyz, batch, n, npoint, start, out, stream);
  }
}

}  // namespace

void launch_fps_registers(const float* xyz, std::int64_t batch, std::int64_t n, std::int64_t npoint,
                          std::int64_t start, unsigned int cluster_blocks, std::int64_t* out,
                          cudaStream_t stream) {
  if (batch == 0) {
    return;
  }
  const std::int64_t per_thread = (n + kCloudThreads - 1) / kCloudThreads;
  if (per_thread <= 1) {
    launch_with_cluster<1>(cluster_blocks, xyz, batch, n, npoint, start, out, stream);
  } else if (per_thread <= 2) {
    launch_with_cluster<2>(cluster_blocks, xyz, batch, n, npoint, start, out, stream);
  } else if (per_thread <= 4) {
    launch_with_cluster<4>(cluster_blocks, xyz, batch, n, npoint, start, out, stream);
  } else {
    launch_with_cluster<8>(cluster_blocks, xyz, batch, n, npoint, start, out, stream);
  }
}

}  // namespace dtrain::kernels::cuda
