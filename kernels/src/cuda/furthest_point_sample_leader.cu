// Furthest point sampling for clouds of up to 8192 points with the register
// kernel's layout, where one warp makes each pick and tells the others which
// of them must update (Note [FPS with one picking warp]).
//
// Note [FPS with one picking warp]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The register kernel (Note [FPS on registers with spatial skipping]) has
// every warp reduce all the warps' candidates after each pick's barrier, read
// the new centre and test it against its own box. Nsight Compute counted
// 2,436 warp-instructions a pick on each SM at the goal size (B = 32, N =
// 8192 -> 1024), 16 warps running that common path (~100 instructions) and
// ~4.5 warps near the centre running the update (~236): the schedulers issue
// the same reduction sixteen times over, and that alone is as long as the
// update (docs/kernels.md, "FPS: which kernel, and the goal"). Here one warp,
// the leader (warp 0), does it once for all:
//  - the warps that update (those near the centre, and the one whose
//    candidate was picked) write their candidate to their slot and arrive at
//    barrier `kSlotsReady` without waiting; the others only arrive;
//  - the leader waits there, reduces the slots to the pick (largest key,
//    lowest index), reads its coordinates, and tests it against every warp
//    at once, lane w against warp w's box and largest running distance (the
//    key in warp w's slot): the same exact test the register kernel's warps
//    make for themselves. It publishes the centre, the pick and the mask of
//    warps to update, and arrives at barrier `kCentreReady`;
//  - the other warps wait at `kCentreReady` and read the centre with the
//    mask (one load); only the warps it names update, the rest arrive at
//    `kSlotsReady` again at once, about ten instructions a pick.
// Named barriers with arrive (bar.arrive) and wait (bar.sync) split the one
// barrier of the register kernel into a producer-consumer pair, so that
// nobody waits at a barrier whose result it does not read: the leader never
// waits for the centre it wrote, the others never wait for the slots. A warp
// writes its slot only after `kCentreReady`, where the leader arrives after
// reading the slots; the leader writes the centre only after `kSlotsReady`,
// which every warp reaches after reading it: one copy of each suffices.
//
// A slot keeps its warp's candidate until that warp updates again: a warp
// the test leaves out has no point that came nearer to the centre, so its
// candidate and its largest distance stand, as in the register kernel.
// The picks are those of sequential FPS, so the CPU kernel's.
//
// Each thread's furthest point is found by the tree of Note [A lane's
// furthest point by a tree]. 1024 threads of up to 8 points (the default) or
// 512 of up to 16 (DTRAIN_CUDA_FPS_THREADS): with the common path gone,
// more and smaller warps shorten the update of the warps near a centre
// (half the points a lane), which is what a pick then waits for. With 1024
// threads the leader's 32 lanes test the 32 warps one each.

#include <stdexcept>
#include <string>

#include "../furthest_in_lane.h"
#include "cuda_check.cuh"
#include "fps_common.cuh"
#include "fps_on_chip.cuh"
#include "fps_registers.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda {

namespace {

using namespace fps;  // fps_common.cuh, fps_on_chip.cuh, fps_registers.cuh

// Named barriers (0 is __syncthreads'), each counting every thread of the
// block.
constexpr unsigned int kSlotsReady = 1;
constexpr unsigned int kCentreReady = 2;

// Waits until `threads` threads (this warp's included) have arrived at
// barrier `id`. Like every barrier instruction, it also orders the memory
// accesses before each arrival before those after the wait.
__device__ inline void barrier_wait(unsigned int id, unsigned int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Arrives at barrier `id` without waiting for it.
__device__ inline void barrier_arrive(unsigned int id, unsigned int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// What the leader publishes after each pick: the new centre, and bit w set
// when warp w updates with it.
struct alignas(16) Centre {
  float x, y, z;
  unsigned int update;
};

template <unsigned int kThreads, int kPerThread>
__global__ void __launch_bounds__(kThreads)
    fps_leader_kernel(const float* __restrict__ xyz, int n, std::int64_t npoint_wide, int start,
                      std::int64_t* __restrict__ out) {
  constexpr unsigned int kWarps = kThreads / kWarp;
  static_assert(kWarps <= kWarp, "the leader tests one warp a lane");
  const int npoint = static_cast<int>(npoint_wide);  // at most n, at most 8192
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ WarpCandidate slots[kWarps];
  __shared__ float boxes[kWarps][6];  // each warp's box: low x, y, z, high x, y, z
  __shared__ float scratch[kWarps];
  __shared__ Centre centre;
  __shared__ unsigned int last_pick;
  std::int64_t* picks = out + static_cast<std::int64_t>(blockIdx.x) * npoint_wide;
  const unsigned int warp = threadIdx.x / kWarp;
  const unsigned int lane = threadIdx.x % kWarp;
  const bool leader = warp == 0;

  int idx[kPerThread];
  const Cloud cloud = deal_cloud<kThreads, kPerThread, false>(
      xyz + static_cast<std::int64_t>(blockIdx.x) * n * 3, n, shared, scratch, idx);
  detail::sort_in_registers(idx);  // for the lane tree; the thread's points, still the same set
  float px[kPerThread], py[kPerThread], pz[kPerThread], dist[kPerThread];
  point_registers(cloud, n, start, idx, px, py, pz, dist);
  // Each warp's box goes to the leader, whose lane l keeps warp l % kWarps's
  // (lanes past kWarps repeat the first ones: same tests, same ballot bits).
  float box_low[3], box_high[3];
  points_warp_box(idx, n, px, py, pz, box_low, box_high);
  if (lane == 0) {
#pragma unroll
    for (int a = 0; a < 3; ++a) {
      boxes[warp][a] = box_low[a];
      boxes[warp][3 + a] = box_high[a];
    }
  }
  __syncthreads();
  if (leader) {
#pragma unroll
    for (int a = 0; a < 3; ++a) {
      box_low[a] = boxes[lane % kWarps][a];
      box_high[a] = boxes[lane % kWarps][3 + a];
    }
  }

  if (threadIdx.x == 0) {
    picks[0] = start;
  }
  // The first round: every warp finds its candidate, with the start as the
  // centre (its own point is already sampled).
  float cx = cloud.xs[start];
  float cy = cloud.ys[start];
  float cz = cloud.zs[start];
  unsigned int pick = static_cast<unsigned int>(start);
  unsigned int update = kFullMask;
  WarpCandidate mine{0u, kNoIndex};
  // Mark the last pick if this warp's candidate was it, update with the
  // centre, and publish the warp's new candidate.
  auto update_warp = [&] {
    // A warp holds an index at most once; one with nothing left to pick
    // holds key 0 and an index already sampled, never a pick.
    if (pick == mine.index) {
      mark_sampled(idx, pick, dist);
    }
    update_distances(cx, cy, cz, px, py, pz, dist);
    float best = 0.0f;
    int at = 0;
    detail::furthest_in_registers(dist, idx, best, at);
    const unsigned int key = distance_key(best);
    mine.key = __reduce_max_sync(kFullMask, key);
    mine.index =
        __reduce_min_sync(kFullMask, key == mine.key ? static_cast<unsigned int>(at) : kNoIndex);
    slots[warp] = mine;  // every lane stores the same candidate: one store
  };
  // The leader and the others each run their own loop, so that neither
  // tests which it is at every pick.
  if (leader) {
    for (int picked = 1; picked < npoint; ++picked) {
      if (update & 1u) {
        update_warp();
      }
      barrier_wait(kSlotsReady, kThreads);
      const WarpCandidate slot = slots[lane % kWarps];
      const unsigned int top = __reduce_max_sync(kFullMask, slot.key);
      pick = __reduce_min_sync(kFullMask, slot.key == top ? slot.index : kNoIndex);
      cx = cloud.xs[pick];
      cy = cloud.ys[pick];
      cz = cloud.zs[pick];
      // Warp lane % kWarps updates when it holds the pick, or when the
      // centre may come nearer to one of its points than that warp's
      // largest running distance (NaN: it may).
      const bool nearer =
          slot.index == pick ||
          !(box_squared_distance(cx, cy, cz, box_low, box_high) >= key_distance(slot.key));
      update = __ballot_sync(kFullMask, nearer);
      centre = {cx, cy, cz, update};  // every lane stores the same: one store
      last_pick = pick;
      barrier_arrive(kCentreReady, kThreads);
      if (lane == 0) {  // off the path the others wait on
        picks[picked] = pick;
      }
    }
  } else {
    for (int picked = 1; picked < npoint; ++picked) {
      if ((update >> warp) & 1u) {
        update_warp();
      }
      barrier_arrive(kSlotsReady, kThreads);
      barrier_wait(kCentreReady, kThreads);
      // Read whole, with no branch: both loads start at once.
      const Centre next = centre;
      cx = next.x;
      cy = next.y;
      cz = next.z;
      update = next.update;
      pick = last_pick;
    }
  }
}

// The largest points per thread: 1024 threads have 64 registers each.
template <unsigned int kThreads>
constexpr int kMaxPerThread = kThreads == 1024 ? 8 : 16;

template <unsigned int kThreads, typename Body>
decltype(auto) with_leader_points(std::int64_t n, Body&& body) {
  return with_points_per_thread<kThreads, kMaxPerThread<kThreads>>(n, std::forward<Body>(body));
}

}  // namespace

std::size_t fps_leader_shared_bytes(std::int64_t n, int threads) {
  auto bytes = [&](auto block) {
    constexpr unsigned int kThreads = decltype(block)::value;
    return with_leader_points<kThreads>(n, [&](auto per_thread) {
      return on_chip_shared_bytes<kThreads, decltype(per_thread)::value>(n);
    });
  };
  return threads == 512 ? bytes(std::integral_constant<unsigned int, 512>{})
                        : bytes(std::integral_constant<unsigned int, 1024>{});
}

void launch_fps_leader(int threads, const float* xyz, std::int64_t batch, std::int64_t n,
                       std::int64_t npoint, std::int64_t start, std::int64_t* out,
                       cudaStream_t stream) {
  if (threads != 512 && threads != 1024) {
    throw std::invalid_argument(
        "furthest_point_sample: the leader kernel runs 512 or 1024 threads a block, got " +
        std::to_string(threads));
  }
  if (batch == 0) {
    return;
  }
  auto launch = [&](auto block) {
    constexpr unsigned int kThreads = decltype(block)::value;
    with_leader_points<kThreads>(n, [&](auto per_thread) {
      constexpr int kPerThread = decltype(per_thread)::value;
      launch_on_chip<kThreads, kPerThread>(fps_leader_kernel<kThreads, kPerThread>, xyz, batch, n,
                                           npoint, start, out, stream);
    });
  };
  if (threads == 512) {
    launch(std::integral_constant<unsigned int, 512>{});
  } else {
    launch(std::integral_constant<unsigned int, 1024>{});
  }
}

}  // namespace dtrain::kernels::cuda
