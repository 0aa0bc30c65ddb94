// Furthest point sampling for clouds of up to 8192 points, latency-bound
// and tuned for it (Note [FPS on registers with spatial skipping]).
//
// Note [FPS on registers with spatial skipping]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// FPS makes npoint dependent picks; each pick is a min-update of every
// point's running distance and an argmax over the cloud, so its time is one
// pick's latency times npoint. One block of 512 threads per cloud:
//  - each thread holds up to 16 points (coordinates, index, running
//    distance) in registers for the whole run; the coordinates are also in
//    shared memory, in input order, to read each pick's position;
//  - the points are dealt out in Morton (Z-curve) order: sorted in the block
//    (cub::BlockRadixSort) by a 30-bit Morton code of their place in the
//    cloud's bounding box, so the 32 x k points of a warp are a compact
//    region with a small bounding box;
//  - a warp skips its points when the new centre's squared distance to the
//    warp's box is at least the warp's largest running distance: then no
//    point of the warp can come closer than it already is, and the warp's
//    candidate stands. Exact, not a heuristic: the box distance is computed
//    with the same rounded arithmetic as a point's (squared_distance on the
//    box point nearest the centre), and rounding is monotone, so it is never
//    above any point's computed distance. After the first picks the running
//    distances are small and only the warps near the new centre update;
//  - a warp's argmax is two integer reductions: a non-negative float's bits
//    order like unsigned integers, so key = bits + 1 for a running distance
//    (0 for sampled and padding points), __reduce_max_sync of the keys, then
//    __reduce_min_sync of the indices holding the maximum (ties: lowest
//    index, as everywhere);
//  - one barrier per pick: each warp writes (key, index) to a double-buffered
//    slot, the block syncs, and every warp reduces all slots itself. The
//    buffers alternate between picks, so a fast warp's next write never
//    lands in a slot another warp is still reading.
// Distances use the rounded arithmetic of Note [FPS distance], so the picks
// equal the CPU kernel's.
//
// Measured on an H200 (B = 32, N = 8192 -> 1024 picks, CUDA events): this
// kernel 0.77 ms; without the skipping 1.08 ms; the one-block shared-memory
// kernel 2.37 ms. Tried and dropped: thread-block clusters of 2-8 blocks per
// cloud (1.7-2.5 us per pick against 1.06 for one block: a cluster barrier
// alone costs 0.2 us, and the hardware may place a cluster's blocks on one
// SM), fewer warps each walking several chunks (0.84-1.1 ms: the per-chunk
// tests cost more than they save).

#include <cub/block/block_radix_sort.cuh>

#include "cuda_check.cuh"
#include "fps_common.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

using namespace fps;  // fps_common.cuh: keys, Morton codes, box distances

constexpr unsigned int kThreads = 512;
constexpr unsigned int kWarps = kThreads / kWarp;
constexpr unsigned int kPaddingCode = 1u << 30;  // after every 30-bit Morton code

struct WarpCandidate {
  unsigned int key;    // running distance's bits + 1; 0: nothing left to pick
  unsigned int index;  // lowest index holding it
};

template <int kPerThread>
using MortonSort = cub::BlockRadixSort<unsigned int, kThreads, kPerThread, int>;

template <int kPerThread>
constexpr std::size_t sort_bytes() {
  return sizeof(typename MortonSort<kPerThread>::TempStorage);
}

// Dynamic shared memory: x, y and z of the cloud, then the sort's storage.
__host__ __device__ inline std::size_t points_bytes(std::int64_t n) {
  return (static_cast<std::size_t>(12 * n) + 15) / 16 * 16;
}

template <int kPerThread>
std::size_t shared_bytes(std::int64_t n) {
  return points_bytes(n) + sort_bytes<kPerThread>();
}

template <int kPerThread>
__global__ void __launch_bounds__(kThreads)
    fps_registers_kernel(const float* __restrict__ xyz, int n, std::int64_t npoint, int start,
                         std::int64_t* __restrict__ out) {
  extern __shared__ __align__(16) unsigned char shared[];
  float* xs = reinterpret_cast<float*>(shared);
  float* ys = xs + n;
  float* zs = ys + n;
  auto& sort_storage =
      *reinterpret_cast<typename MortonSort<kPerThread>::TempStorage*>(shared + points_bytes(n));
  __shared__ WarpCandidate slots[2][kWarps];
  __shared__ float scratch[kWarps];

  const float* points = xyz + static_cast<std::int64_t>(blockIdx.x) * n * 3;
  std::int64_t* picks = out + static_cast<std::int64_t>(blockIdx.x) * npoint;

  // The cloud into shared memory, and its bounding box.
  for (int j = threadIdx.x; j < n; j += kThreads) {
    xs[j] = points[3 * j];
    ys[j] = points[3 * j + 1];
    zs[j] = points[3 * j + 2];
  }
  float low[3], high[3];
  fps::block_bounding_box<kThreads>(points, n, scratch, low, high);
  __syncthreads();

  // Morton order: thread t ends with the kPerThread consecutive codes from
  // t * kPerThread on, so warp w holds one compact stretch of the curve.
  unsigned int codes[kPerThread];
  int idx[kPerThread];
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    const int j = static_cast<int>(threadIdx.x) * kPerThread + s;
    if (j < n) {
      const float p[3] = {xs[j], ys[j], zs[j]};
      codes[s] = fps::morton_code<10>(p, low, high);
      idx[s] = j;
    } else {
      codes[s] = kPaddingCode;
      idx[s] = n;
    }
  }
  MortonSort<kPerThread>(sort_storage).Sort(codes, idx, 0, 31);

  float px[kPerThread], py[kPerThread], pz[kPerThread], dist[kPerThread];
  float box_low[3] = {INFINITY, INFINITY, INFINITY};
  float box_high[3] = {-INFINITY, -INFINITY, -INFINITY};
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    if (idx[s] < n) {
      px[s] = xs[idx[s]];
      py[s] = ys[idx[s]];
      pz[s] = zs[idx[s]];
      dist[s] = idx[s] == start ? -1.0f : INFINITY;  // sampled: -1
      grow_box(box_low, box_high, {px[s], py[s], pz[s]});
    } else {
      px[s] = py[s] = pz[s] = 0.0f;
      dist[s] = -2.0f;  // padding: below every real point, never picked
    }
  }
  // The warp's box (a warp of padding only has an empty box, always skipped).
  warp_box(box_low, box_high);

  const unsigned int lane = threadIdx.x % kWarp;
  const unsigned int warp = threadIdx.x / kWarp;
  if (threadIdx.x == 0) {
    picks[0] = start;
  }
  float cx = xs[start];
  float cy = ys[start];
  float cz = zs[start];
  WarpCandidate mine{0u, kNoIndex};
  float largest = INFINITY;  // the warp's largest running distance
  bool stale = true;         // the warp's candidate was picked: recompute
  for (std::int64_t i = 1; i < npoint; ++i) {
    if (stale || !(fps::box_squared_distance(cx, cy, cz, box_low, box_high) >= largest)) {
      float best = -3.0f;
#pragma unroll
      for (int s = 0; s < kPerThread; ++s) {
        const float d = squared_distance(cx, cy, cz, px[s], py[s], pz[s]);
        const float current = d < dist[s] ? d : dist[s];
        dist[s] = current;
        best = fmaxf(best, current);
      }
      unsigned int candidate = kNoIndex;
#pragma unroll
      for (int s = 0; s < kPerThread; ++s) {
        if (dist[s] == best) {
          candidate = min(candidate, static_cast<unsigned int>(idx[s]));
        }
      }
      const unsigned int key = distance_key(best);
      mine.key = __reduce_max_sync(kFullMask, key);
      mine.index = __reduce_min_sync(kFullMask, key == mine.key ? candidate : kNoIndex);
      largest = key_distance(mine.key);
      stale = false;
    }
    WarpCandidate* buffer = slots[i & 1];
    if (lane == 0) {
      buffer[warp] = mine;
    }
    __syncthreads();
    const WarpCandidate slot = lane < kWarps ? buffer[lane] : WarpCandidate{0u, kNoIndex};
    const unsigned int key = __reduce_max_sync(kFullMask, slot.key);
    const unsigned int pick = __reduce_min_sync(kFullMask, slot.key == key ? slot.index : kNoIndex);
    const unsigned int owner =
        __ffs(__ballot_sync(kFullMask, slot.key == key && slot.index == pick)) - 1;
    if (warp == owner) {
#pragma unroll
      for (int s = 0; s < kPerThread; ++s) {
        if (idx[s] == static_cast<int>(pick)) {
          dist[s] = -1.0f;
        }
      }
      stale = true;
    }
    if (threadIdx.x == 0) {
      picks[i] = pick;
    }
    cx = xs[pick];
    cy = ys[pick];
    cz = zs[pick];
  }
}

template <int kPerThread>
void launch(const float* xyz, std::int64_t batch, std::int64_t n, std::int64_t npoint,
            std::int64_t start, std::int64_t* out, cudaStream_t stream) {
  const auto kernel = fps_registers_kernel<kPerThread>;
  const std::size_t bytes = shared_bytes<kPerThread>(n);
  DTRAIN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(bytes)));
  kernel<<<static_cast<unsigned int>(batch), kThreads, bytes, stream>>>(
      xyz, static_cast<int>(n), npoint, static_cast<int>(start), out);
  DTRAIN_CUDA_CHECK_LAUNCH();
}

int per_thread(std::int64_t n) {
  const std::int64_t needed = (n + kThreads - 1) / kThreads;
  int per = 1;
  while (per < needed) {
    per *= 2;
  }
  return per;
}

}  // namespace

std::size_t fps_registers_shared_bytes(std::int64_t n) {
  switch (per_thread(n)) {
    case 1:
      return shared_bytes<1>(n);
    case 2:
      return shared_bytes<2>(n);
    case 4:
      return shared_bytes<4>(n);
    case 8:
      return shared_bytes<8>(n);
    default:
      return shared_bytes<16>(n);
  }
}

void launch_fps_registers(const float* xyz, std::int64_t batch, std::int64_t n, std::int64_t npoint,
                          std::int64_t start, std::int64_t* out, cudaStream_t stream) {
  if (batch == 0) {
    return;
  }
  switch (per_thread(n)) {
    case 1:
      return launch<1>(xyz, batch, n, npoint, start, out, stream);
    case 2:
      return launch<2>(xyz, batch, n, npoint, start, out, stream);
    case 4:
      return launch<4>(xyz, batch, n, npoint, start, out, stream);
    case 8:
      return launch<8>(xyz, batch, n, npoint, start, out, stream);
    default:
      return launch<16>(xyz, batch, n, npoint, start, out, stream);
  }
}

}  // namespace dtrain::kernels::cuda
