// What the on-chip FPS kernels (furthest_point_sample_registers.cu, and the
// experimental ones in kernels/experimental/src/cuda) share: the cloud
// copied into shared memory, its points dealt out to the threads in Morton
// order, and the block's pick from the warps' candidates.
#pragma once

#include <cub/block/block_radix_sort.cuh>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda_check.cuh"
#include "fps_common.cuh"

namespace dtrain::kernels::cuda::fps {

constexpr unsigned int kPaddingCode = 1u << 30;  // after every 30-bit Morton code

template <unsigned int kThreads, int kPerThread>
using MortonSort = cub::BlockRadixSort<unsigned int, kThreads, kPerThread, int>;

// Dynamic shared memory: x, y and z of the cloud, then the sort's storage.
__host__ __device__ inline std::size_t cloud_bytes(std::int64_t n) {
  return (static_cast<std::size_t>(12 * n) + 15) / 16 * 16;
}

template <unsigned int kThreads, int kPerThread>
std::size_t on_chip_shared_bytes(std::int64_t n) {
  return cloud_bytes(n) + sizeof(typename MortonSort<kThreads, kPerThread>::TempStorage);
}

// The cloud of this block in shared memory (x[n], y[n], z[n] from `shared`),
// and the storage its sort may use after it.
struct Cloud {
  float* xs;
  float* ys;
  float* zs;
  unsigned char* after;
};

__device__ inline Cloud cloud_in(unsigned char* shared, int n) {
  float* xs = reinterpret_cast<float*>(shared);
  return {xs, xs + n, xs + 2 * n, shared + cloud_bytes(n)};
}

// Copies the n points (x, y, z rows) into the cloud and finds their
// bounding box; every thread gets it and may read the cloud afterwards.
// scratch: kThreads / 32 floats of shared memory.
template <unsigned int kThreads>
__device__ inline void load_cloud(const float* points, int n, const Cloud& cloud, float* scratch,
                                  float (&low)[3], float (&high)[3]) {
  for (int j = threadIdx.x; j < n; j += kThreads) {
    cloud.xs[j] = points[3 * j];
    cloud.ys[j] = points[3 * j + 1];
    cloud.zs[j] = points[3 * j + 2];
  }
  block_bounding_box<kThreads>(points, n, scratch, low, high);
  __syncthreads();
}

// The indices of the cloud sorted by the Morton code of each point's place
// in the box [low, high], padded with n past the end. Blocked: thread t gets
// sorted positions t * kPerThread + s; striped: s * kThreads + t.
template <unsigned int kThreads, int kPerThread, bool kStriped>
__device__ inline void morton_order(const Cloud& cloud, int n, const float (&low)[3],
                                    const float (&high)[3], int (&idx)[kPerThread]) {
  using Sort = MortonSort<kThreads, kPerThread>;
  unsigned int codes[kPerThread];
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    const int j = static_cast<int>(threadIdx.x) * kPerThread + s;
    if (j < n) {
      const float p[3] = {cloud.xs[j], cloud.ys[j], cloud.zs[j]};
      codes[s] = morton_code<10>(p, low, high);
      idx[s] = j;
    } else {
      codes[s] = kPaddingCode;
      idx[s] = n;
    }
  }
  auto& storage = *reinterpret_cast<typename Sort::TempStorage*>(cloud.after);
  if constexpr (kStriped) {
    Sort(storage).SortBlockedToStriped(codes, idx, 0, 31);
  } else {
    Sort(storage).Sort(codes, idx, 0, 31);
  }
}

// The points (x, y, z rows; n of them) in shared memory, and this thread's
// share of them in Morton order (morton_order). scratch: kThreads / 32
// floats of shared memory.
template <unsigned int kThreads, int kPerThread, bool kStriped>
__device__ inline Cloud deal_cloud(const float* points, int n, unsigned char* shared,
                                   float* scratch, int (&idx)[kPerThread]) {
  const Cloud cloud = cloud_in(shared, n);
  float low[3], high[3];
  load_cloud<kThreads>(points, n, cloud, scratch, low, high);
  morton_order<kThreads, kPerThread, kStriped>(cloud, n, low, high, idx);
  return cloud;
}

// The coordinates and first running distances of the points idx: +inf, -1
// for the start (sampled), -2 for padding (below every real point, never
// picked; its coordinates are 0 and belong in no box).
template <int kPerThread>
__device__ inline void point_registers(const Cloud& cloud, int n, int start,
                                       const int (&idx)[kPerThread], float (&px)[kPerThread],
                                       float (&py)[kPerThread], float (&pz)[kPerThread],
                                       float (&dist)[kPerThread]) {
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    if (idx[s] < n) {
      px[s] = cloud.xs[idx[s]];
      py[s] = cloud.ys[idx[s]];
      pz[s] = cloud.zs[idx[s]];
      dist[s] = idx[s] == start ? -1.0f : INFINITY;
    } else {
      px[s] = py[s] = pz[s] = 0.0f;
      dist[s] = -2.0f;
    }
  }
}

struct WarpCandidate {
  unsigned int key;    // distance_key of the running distance; 0: nothing to pick
  unsigned int index;  // lowest index holding it
};

// The block's pick from every warp's candidate: the largest key, ties to
// the lowest index. One barrier; `buffer` (kWarps slots) must alternate
// between two arrays from one pick to the next, so that a fast warp's next
// write never lands in a slot another warp is still reading.
template <unsigned int kWarps>
__device__ inline unsigned int block_pick(WarpCandidate* buffer, const WarpCandidate& mine) {
  const unsigned int lane = threadIdx.x % kWarp;
  if (lane == 0) {
    buffer[threadIdx.x / kWarp] = mine;
  }
  __syncthreads();
  const WarpCandidate slot = lane < kWarps ? buffer[lane] : WarpCandidate{0u, kNoIndex};
  const unsigned int key = __reduce_max_sync(kFullMask, slot.key);
  return __reduce_min_sync(kFullMask, slot.key == key ? slot.index : kNoIndex);
}

// Calls body(std::integral_constant<int, k>{}) with the points per thread k
// (1, 2, 4, 8 or 16, at most kMaxPerThread) that n points need among
// kThreads threads. More than kMaxPerThread * kThreads points is an error:
// the points past them would never be dealt out, so never picked. (A block
// of 1024 threads has registers for 8 points a thread at most, so its
// kernels are never instantiated for 16.)
template <unsigned int kThreads, int kMaxPerThread = 16, typename Body>
decltype(auto) with_points_per_thread(std::int64_t n, Body&& body) {
  static_assert(kMaxPerThread == 8 || kMaxPerThread == 16, "8 or 16 points a thread at most");
  const std::int64_t needed = (n + kThreads - 1) / kThreads;
  if (needed > kMaxPerThread) {
    throw std::invalid_argument("furthest_point_sample: one block of " + std::to_string(kThreads) +
                                " threads of the on-chip kernels holds " +
                                std::to_string(kMaxPerThread * kThreads) + " points, got " +
                                std::to_string(n));
  }
  if (needed <= 1) {
    return body(std::integral_constant<int, 1>{});
  }
  if (needed <= 2) {
    return body(std::integral_constant<int, 2>{});
  }
  if (needed <= 4) {
    return body(std::integral_constant<int, 4>{});
  }
  if constexpr (kMaxPerThread == 8) {
    return body(std::integral_constant<int, 8>{});
  } else {
    if (needed <= 8) {
      return body(std::integral_constant<int, 8>{});
    }
    return body(std::integral_constant<int, 16>{});
  }
}

// A grid of `blocks` blocks is within CUDA's limit on gridDim.x.
inline void check_grid_size(std::int64_t blocks) {
  constexpr std::int64_t kMaxGrid = 2147483647;
  if (blocks > kMaxGrid) {
    throw std::invalid_argument("furthest_point_sample: " + std::to_string(blocks) +
                                " blocks exceed CUDA's grid limit of " + std::to_string(kMaxGrid));
  }
}

// Launches an on-chip kernel, one block of kThreads per cloud, with the
// shared memory its cloud and sort need.
template <unsigned int kThreads, int kPerThread, typename Kernel>
void launch_on_chip(Kernel kernel, const float* xyz, std::int64_t batch, std::int64_t n,
                    std::int64_t npoint, std::int64_t start, std::int64_t* out,
                    cudaStream_t stream) {
  check_grid_size(batch);
  const std::size_t bytes = on_chip_shared_bytes<kThreads, kPerThread>(n);
  DTRAIN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(bytes)));
  kernel<<<static_cast<unsigned int>(batch), kThreads, bytes, stream>>>(
      xyz, static_cast<int>(n), npoint, static_cast<int>(start), out);
  DTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace dtrain::kernels::cuda::fps
