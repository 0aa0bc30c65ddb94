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

#include "cuda_check.cuh"
#include "fps_common.cuh"
#include "fps_on_chip.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

using namespace fps;  // fps_common.cuh, fps_on_chip.cuh

constexpr unsigned int kThreads = 512;
constexpr unsigned int kWarps = kThreads / kWarp;

template <int kPerThread>
__global__ void __launch_bounds__(kThreads)
    fps_registers_kernel(const float* __restrict__ xyz, int n, std::int64_t npoint, int start,
                         std::int64_t* __restrict__ out) {
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ WarpCandidate slots[2][kWarps];
  __shared__ float scratch[kWarps];
  std::int64_t* picks = out + static_cast<std::int64_t>(blockIdx.x) * npoint;
  // Thread t holds the kPerThread consecutive codes from t * kPerThread on,
  // so warp w holds one compact stretch of the curve.
  int idx[kPerThread];
  const Cloud cloud = deal_cloud<kThreads, kPerThread, false>(
      xyz + static_cast<std::int64_t>(blockIdx.x) * n * 3, n, shared, scratch, idx);
  float px[kPerThread], py[kPerThread], pz[kPerThread], dist[kPerThread];
  point_registers(cloud, n, start, idx, px, py, pz, dist);
  float box_low[3] = {INFINITY, INFINITY, INFINITY};
  float box_high[3] = {-INFINITY, -INFINITY, -INFINITY};
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    if (idx[s] < n) {
      grow_box(box_low, box_high, {px[s], py[s], pz[s]});
    }
  }
  // The warp's box (a warp of padding only has an empty box, always skipped).
  warp_box(box_low, box_high);

  if (threadIdx.x == 0) {
    picks[0] = start;
  }
  float cx = cloud.xs[start];
  float cy = cloud.ys[start];
  float cz = cloud.zs[start];
  WarpCandidate mine{0u, kNoIndex};
  float largest = INFINITY;  // the warp's largest running distance
  bool stale = true;         // the warp's candidate was picked: recompute
  for (std::int64_t i = 1; i < npoint; ++i) {
    if (stale || !(box_squared_distance(cx, cy, cz, box_low, box_high) >= largest)) {
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
    const unsigned int pick = block_pick<kWarps>(slots[i & 1], mine);
    // An index lives in one warp only; a warp with nothing left to pick
    // holds key 0 and an index already sampled, never the pick.
    if (pick == mine.index) {
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
    cx = cloud.xs[pick];
    cy = cloud.ys[pick];
    cz = cloud.zs[pick];
  }
}

}  // namespace

std::size_t fps_registers_shared_bytes(std::int64_t n) {
  return with_points_per_thread<kThreads>(n, [&](auto per_thread) {
    return on_chip_shared_bytes<kThreads, decltype(per_thread)::value>(n);
  });
}

void launch_fps_registers(const float* xyz, std::int64_t batch, std::int64_t n, std::int64_t npoint,
                          std::int64_t start, std::int64_t* out, cudaStream_t stream) {
  if (batch == 0) {
    return;
  }
  with_points_per_thread<kThreads>(n, [&](auto per_thread) {
    constexpr int kPerThread = decltype(per_thread)::value;
    launch_on_chip<kThreads, kPerThread>(fps_registers_kernel<kPerThread>, xyz, batch, n, npoint,
                                         start, out, stream);
  });
}

}  // namespace dtrain::kernels::cuda
