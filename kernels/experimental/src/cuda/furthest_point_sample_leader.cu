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
// update (benchmarks/results/gpu_fps_profile.txt). Here one warp,
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
// furthest point by a tree]. 1024 threads of up to 8 points (the default for
// one pick a round) or 512 of up to 16 (ExperimentalFps::threads): with the
// common path gone, more and smaller warps shorten the update of the warps
// near a centre (half the points a lane), which is what a pick then waits
// for. With 1024 threads the leader's 32 lanes test the 32 warps one each.
//
// With rounds of 2 (or 4) picks the leader may take up to two (or four)
// picks a round by the register kernel's exact rule (Note [FPS on
// registers in rounds of picks]: each slot also holds the warp's rest, and
// round_order / picks_of_round in fps_registers.cuh decide), and names for
// each centre taken the warps that update with it; a warp marks the pick
// it held and updates with each centre it is named for. The runner-up that
// a rest needs does not fit in the 64 registers of 1024 threads (ptxas
// spills it inside the loop), so rounds run on 512 threads of up to 16
// points.

#include <stdexcept>
#include <string>
#include <type_traits>

#include "../furthest_in_lane.h"
#include "cuda_check.cuh"
#include "fps_common.cuh"
#include "fps_on_chip.cuh"
#include "fps_registers.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda::experimental {

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

// A centre the leader publishes: a pick and its point.
struct alignas(16) Centre {
  float x, y, z;
  unsigned int pick;
};

// What else the leader publishes after a round: the picks it took, and for
// each, the warps that update with its centre (bit w: warp w).
template <int kRound>
struct alignas(8) RoundNews {
  unsigned int count;
  unsigned int update[kRound];
};

template <unsigned int kThreads, int kPerThread, int kRound>
__global__ void __launch_bounds__(kThreads)
    fps_leader_kernel(const float* __restrict__ xyz, int n, std::int64_t npoint_wide, int start,
                      std::int64_t* __restrict__ out) {
  static_assert(kRound == 1 || kRound == 2 || kRound == 4, "rounds of one, two or four picks");
  constexpr unsigned int kWarps = kThreads / kWarp;
  static_assert(kWarps <= kWarp, "the leader tests one warp a lane");
  using Slot = std::conditional_t<kRound == 1, WarpCandidate, RoundSlot>;
  const int npoint = static_cast<int>(npoint_wide);  // at most n, at most 8192
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ Slot slots[kWarps];
  __shared__ float boxes[kWarps][6];  // each warp's box: low x, y, z, high x, y, z
  __shared__ float scratch[kWarps];
  __shared__ Centre centres[kRound];
  __shared__ RoundNews<kRound> news;
  std::int64_t* picks = out + static_cast<std::int64_t>(blockIdx.x) * npoint_wide;
  const unsigned int warp = threadIdx.x / kWarp;
  const unsigned int lane = threadIdx.x % kWarp;

  int idx[kPerThread];
  const Cloud cloud = deal_cloud<kThreads, kPerThread, false>(
      xyz + static_cast<std::int64_t>(blockIdx.x) * n * 3, n, shared, scratch, idx);
  detail::sort_in_registers(idx);  // for the lane tree; the thread's points, still the same set
  float px[kPerThread], py[kPerThread], pz[kPerThread], dist[kPerThread];
  point_registers(cloud, n, start, idx, px, py, pz, dist);
  {
    // Each warp's box, for the leader's tests.
    float low[3], high[3];
    points_warp_box(idx, n, px, py, pz, low, high);
    if (lane == 0) {
#pragma unroll
      for (int a = 0; a < 3; ++a) {
        boxes[warp][a] = low[a];
        boxes[warp][3 + a] = high[a];
      }
    }
  }
  __syncthreads();

  if (threadIdx.x == 0) {
    picks[0] = start;
  }
  // The last round's centres, and the warps that update with each. The
  // first round: the start alone (already sampled), every warp updating to
  // find its first candidate.
  float cx[kRound] = {}, cy[kRound] = {}, cz[kRound] = {};
  unsigned int pick[kRound] = {}, update[kRound] = {};
  cx[0] = cloud.xs[start];
  cy[0] = cloud.ys[start];
  cz[0] = cloud.zs[start];
  pick[0] = static_cast<unsigned int>(start);
  update[0] = kFullMask;
  int count = 1;
  WarpCandidate mine{0u, kNoIndex};
  // Whether this warp updates with centre m (one centre: the warp updates
  // only when named, so always).
  auto with_centre = [&](int m) { return kRound == 1 || ((update[m] >> warp) & 1u) != 0; };
  // Mark the picks this warp held, update with the centres it is named
  // for, and publish the warp's new candidate.
  auto update_warp = [&] {
#pragma unroll
    for (int m = 0; m < kRound; ++m) {
      if (with_centre(m)) {
        // A warp holds an index at most once; one with nothing left to
        // pick holds key 0 and an index already sampled, never a pick.
        if (pick[m] == mine.index) {
          mark_sampled(idx, pick[m], dist);
        }
        update_distances(cx[m], cy[m], cz[m], px, py, pz, dist);
      }
    }
    float best = 0.0f;
    float second = 0.0f;
    int at = 0;
    if constexpr (kRound > 1) {
      detail::furthest_two_in_registers(dist, idx, best, at, second);
    } else {
      detail::furthest_in_registers(dist, idx, best, at);
    }
    const RoundSlot found = warp_slot<(kRound > 1)>(best, static_cast<unsigned int>(at), second);
    mine = {found.key, found.index};
    if constexpr (kRound > 1) {
      slots[warp] = found;  // every lane stores the same candidate: one store
    } else {
      slots[warp] = mine;
    }
  };
  auto named = [&] {
    unsigned int any = 0;
#pragma unroll
    for (int m = 0; m < kRound; ++m) {
      any |= update[m];
    }
    return ((any >> warp) & 1u) != 0;
  };
  // The leader and the others each run their own loop, so that neither
  // tests which it is at every round.
  if (warp == 0) {
    for (int picked = 1; picked < npoint; picked += count) {
      if (named()) {
        update_warp();
      }
      // Warp lane % kWarps's box, read again each round (1024 threads have
      // no registers to keep it), before the wait: off the path.
      float low[3], high[3];
#pragma unroll
      for (int a = 0; a < 3; ++a) {
        low[a] = boxes[lane % kWarps][a];
        high[a] = boxes[lane % kWarps][3 + a];
      }
      barrier_wait(kSlotsReady, kThreads);
      const Slot slot = slots[lane % kWarps];
      if constexpr (kRound == 1) {
        const unsigned int top = __reduce_max_sync(kFullMask, slot.key);
        pick[0] = __reduce_min_sync(kFullMask, slot.key == top ? slot.index : kNoIndex);
        cx[0] = cloud.xs[pick[0]];
        cy[0] = cloud.ys[pick[0]];
        cz[0] = cloud.zs[pick[0]];
      } else {
        const RoundCandidates<kRound> round = round_order<kRound, kWarps>(slot);
#pragma unroll
        for (int j = 0; j < kRound; ++j) {
          pick[j] = round.picks[j];
        }
        candidate_points(cloud, n, round.picks, cx, cy, cz);
        count = picks_of_round(round, cx, cy, cz, npoint - picked);
      }
      // Warp lane % kWarps updates with centre m when it holds that pick,
      // or when the centre may come nearer to one of its points than the
      // warp's largest running distance (NaN: it may).
      const float largest = key_distance(slot.key);
      RoundNews<kRound> told;
      told.count = static_cast<unsigned int>(count);
#pragma unroll
      for (int m = 0; m < kRound; ++m) {
        const bool nearer = (kRound == 1 || m < count) &&
                            (slot.index == pick[m] ||
                             !(box_squared_distance(cx[m], cy[m], cz[m], low, high) >= largest));
        update[m] = __ballot_sync(kFullMask, nearer);
        told.update[m] = update[m];
        centres[m] = {cx[m], cy[m], cz[m], pick[m]};  // every lane stores the same: one store
      }
      news = told;
      barrier_arrive(kCentreReady, kThreads);
#pragma unroll
      for (int m = 0; m < kRound; ++m) {  // off the path the others wait on
        if (lane == static_cast<unsigned int>(m) && (kRound == 1 || m < count)) {
          picks[picked + m] = pick[m];
        }
      }
    }
  } else {
    for (int picked = 1; picked < npoint; picked += count) {
      if (named()) {
        update_warp();
      }
      barrier_arrive(kSlotsReady, kThreads);
      barrier_wait(kCentreReady, kThreads);
      // Read whole, with no branch: the loads start at once.
      const RoundNews<kRound> told = news;
      if constexpr (kRound > 1) {
        count = static_cast<int>(told.count);
      }
#pragma unroll
      for (int m = 0; m < kRound; ++m) {
        update[m] = told.update[m];
        const Centre centre = centres[m];
        cx[m] = centre.x;
        cy[m] = centre.y;
        cz[m] = centre.z;
        pick[m] = centre.pick;
      }
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

void launch_fps_leader(int threads, int round, const float* xyz, std::int64_t batch, std::int64_t n,
                       std::int64_t npoint, std::int64_t start, std::int64_t* out,
                       cudaStream_t stream) {
  // Rounds of more than one pick hold more per thread than 64 registers
  // (1024 threads) have room for: they run on 512.
  if (!((threads == 1024 && round == 1) ||
        (threads == 512 && (round == 1 || round == 2 || round == 4)))) {
    throw std::invalid_argument(
        "furthest_point_sample: the leader kernel runs 1024 threads a block with one pick a "
        "round, or 512 with rounds of 1, 2 or 4 picks; got " +
        std::to_string(threads) + " threads and rounds of " + std::to_string(round));
  }
  if (batch == 0) {
    return;
  }
  auto launch = [&](auto block, auto picks_per_round) {
    constexpr unsigned int kThreads = decltype(block)::value;
    constexpr int kRound = decltype(picks_per_round)::value;
    with_leader_points<kThreads>(n, [&](auto per_thread) {
      constexpr int kPerThread = decltype(per_thread)::value;
      launch_on_chip<kThreads, kPerThread>(fps_leader_kernel<kThreads, kPerThread, kRound>, xyz,
                                           batch, n, npoint, start, out, stream);
    });
  };
  auto with_round = [&](auto block) {
    if (round == 4) {
      launch(block, std::integral_constant<int, 4>{});
    } else if (round == 2) {
      launch(block, std::integral_constant<int, 2>{});
    } else {
      launch(block, std::integral_constant<int, 1>{});
    }
  };
  if (threads == 512) {
    with_round(std::integral_constant<unsigned int, 512>{});
  } else {
    launch(std::integral_constant<unsigned int, 1024>{}, std::integral_constant<int, 1>{});
  }
}

}  // namespace dtrain::kernels::cuda::experimental
