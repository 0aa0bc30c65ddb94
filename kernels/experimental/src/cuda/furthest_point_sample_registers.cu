// The register FPS kernel with two additions that have not run on a GPU
// (kernels/experimental/README.md): a thread's furthest point by a tree
// (Note [A lane's furthest point by a tree] in src/furthest_in_lane.h) and
// rounds of up to two or four picks per barrier (Note [FPS on registers in
// rounds of picks] below); it also takes each point's new running distance
// with fminf (update_distances in fps_registers.cuh) and the block's pick
// from slots indexed in place (fps_on_chip_rounds.cuh). Everything else is
// the default register kernel's design (Note [FPS on registers with spatial
// skipping] in kernels/src/cuda/furthest_point_sample_registers.cu): one
// block of 512 threads per cloud, up to 16 points a thread in registers,
// dealt out in Morton order, warps skipped by their bounding box, one
// barrier per round.

// Note [FPS on registers in rounds of picks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With rounds of 2 (or 4) picks one barrier may decide two (or up to four)
// picks, by the exact rule of Note [FPS in rounds of independent
// picks] (furthest_point_sample_striped.cu) with this kernel's warps as the
// units. Each warp also publishes `rest`, the largest key among its points
// besides its candidate (its threads' runners-up: furthest_two_in_registers
// in furthest_in_lane.h, so rounds take the lane tree). After the barrier
// every warp takes the block's best candidate c1, then the best c2 of the
// other warps, and so on, and accepts c_j too when its key is above the rest
// of every warp taken before it and none of c1 .. c_j-1 comes closer to c_j
// than its running distance: then c_j is the furthest point once those are
// sampled, as sequential FPS would pick it. Each candidate's key is the
// largest below the one before (one warp reduction after another); the
// round stops after a key two warps hold, since the next key would skip one
// of them. The update that follows applies every centre taken (a warp
// updates with each centre its box is near); a grid's ties end rounds
// early, as the strict rule rejects them. What it costs: the thread's
// runner-up, one more reduction and a ballot in a warp that updates; after
// the barrier a chain of one reduction per candidate, three more beside
// each, the test between each pair of candidates, and a box test per centre
// in every warp.

#include <stdexcept>
#include <string>
#include <type_traits>

#include "../furthest_in_lane.h"
#include "cuda_check.cuh"
#include "fps_common.cuh"
#include "fps_on_chip.cuh"
#include "fps_on_chip_rounds.cuh"
#include "fps_registers.cuh"
#include "launchers.h"
#include "point_common.cuh"

namespace dtrain::kernels::cuda::experimental {

namespace {

using namespace fps;  // fps_common.cuh, fps_on_chip*.cuh, fps_registers.cuh

constexpr unsigned int kThreads = 512;
constexpr unsigned int kWarps = kThreads / kWarp;

// The largest running distance among a thread's points and the lowest
// index holding it: kLaneTree, by a tree over indices sorted in the thread
// (Note [A lane's furthest point by a tree]); else by a pass for the largest
// and a second for its lowest index. kRunnerUp (the tree only): also
// `second`, the largest distance among the thread's other points (Note [FPS
// on registers in rounds of picks]).
template <int kPerThread, bool kLaneTree, bool kRunnerUp>
__device__ inline void lane_furthest(const float (&dist)[kPerThread], const int (&idx)[kPerThread],
                                     float& furthest, unsigned int& index, float& second) {
  static_assert(kLaneTree || !kRunnerUp, "the runner-up comes from the tree");
  if constexpr (kLaneTree) {
    int at = 0;
    if constexpr (kRunnerUp) {
      detail::furthest_two_in_registers(dist, idx, furthest, at, second);
    } else {
      detail::furthest_in_registers(dist, idx, furthest, at);
    }
    index = static_cast<unsigned int>(at);
  } else {
    furthest = detail::kBelowEveryDistance;
#pragma unroll
    for (int s = 0; s < kPerThread; ++s) {
      furthest = fmaxf(furthest, dist[s]);
    }
    index = kNoIndex;
#pragma unroll
    for (int s = 0; s < kPerThread; ++s) {
      if (dist[s] == furthest) {
        index = min(index, static_cast<unsigned int>(idx[s]));
      }
    }
  }
}

// The round's candidates from every warp's slot (Note [FPS on registers in
// rounds of picks]); slots alternate as in block_pick.
template <int kRound>
__device__ inline RoundCandidates<kRound> round_candidates(RoundSlot (&slots)[2][kWarps],
                                                           unsigned int parity,
                                                           const RoundSlot& mine) {
  const unsigned int lane = threadIdx.x % kWarp;
  slots[parity][threadIdx.x / kWarp] = mine;
  __syncthreads();
  return round_order<kRound, kWarps>(slots[parity][lane % kWarps]);
}

template <int kPerThread, bool kLaneTree, int kRound>
__global__ void __launch_bounds__(kThreads)
    fps_registers_kernel(const float* __restrict__ xyz, int n, std::int64_t npoint_wide, int start,
                         std::int64_t* __restrict__ out) {
  static_assert(kRound == 1 || kRound == 2 || kRound == 4, "rounds of one, two or four picks");
  const int npoint = static_cast<int>(npoint_wide);  // at most n, at most 8192
  using Slot = std::conditional_t<kRound == 1, WarpCandidate, RoundSlot>;
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ Slot slots[2][kWarps];
  __shared__ float scratch[kWarps];
  std::int64_t* picks = out + static_cast<std::int64_t>(blockIdx.x) * npoint_wide;
  // Thread t holds the kPerThread consecutive codes from t * kPerThread on,
  // so warp w holds one compact stretch of the curve.
  int idx[kPerThread];
  const Cloud cloud = deal_cloud<kThreads, kPerThread, false>(
      xyz + static_cast<std::int64_t>(blockIdx.x) * n * 3, n, shared, scratch, idx);
  if constexpr (kLaneTree) {
    detail::sort_in_registers(idx);  // the thread's points, still the same set
  }
  float px[kPerThread], py[kPerThread], pz[kPerThread], dist[kPerThread];
  point_registers(cloud, n, start, idx, px, py, pz, dist);
  float box_low[3], box_high[3];
  points_warp_box(idx, n, px, py, pz, box_low, box_high);

  if (threadIdx.x == 0) {
    picks[0] = start;
  }
  // The centres of the last round: its first pick, and the others taken.
  float cx[kRound] = {}, cy[kRound] = {}, cz[kRound] = {};
  cx[0] = cloud.xs[start];
  cy[0] = cloud.ys[start];
  cz[0] = cloud.zs[start];
  int centres = 1;
  WarpCandidate mine{0u, kNoIndex};
  unsigned int rest = 0;     // kRound > 1: the largest key among the warp's other points
  float largest = INFINITY;  // the warp's largest running distance
  bool stale = true;         // the warp's candidate was picked: recompute
  unsigned int parity = 0;
  for (int picked = 1; picked < npoint; parity ^= 1u) {
    bool near[kRound];
    bool update = stale;
#pragma unroll
    for (int m = 0; m < kRound; ++m) {
      near[m] =
          m < centres && !(box_squared_distance(cx[m], cy[m], cz[m], box_low, box_high) >= largest);
      update = update || near[m];
    }
    if (update) {
      // One centre: no branch (a stale warp far from it updates to no
      // effect). More: each centre this warp's box is near.
#pragma unroll
      for (int m = 0; m < kRound; ++m) {
        if (kRound == 1 || near[m]) {
          update_distances(cx[m], cy[m], cz[m], px, py, pz, dist);
        }
      }
      float best = 0.0f;
      float second = 0.0f;
      unsigned int candidate = kNoIndex;
      lane_furthest<kPerThread, kLaneTree, (kRound > 1)>(dist, idx, best, candidate, second);
      const RoundSlot found = warp_slot<(kRound > 1)>(best, candidate, second);
      mine = {found.key, found.index};
      if constexpr (kRound > 1) {
        rest = found.rest;
      }
      largest = key_distance(mine.key);
      stale = false;
    }
    // An index lives in one warp only; a warp with nothing left to pick
    // holds key 0 and an index already sampled, never a pick.
    if constexpr (kRound == 1) {
      const unsigned int pick = block_pick<kWarps>(slots, parity, mine);
      if (pick == mine.index) {
        mark_sampled(idx, pick, dist);
        stale = true;
      }
      if (threadIdx.x == 0) {
        picks[picked] = pick;
      }
      cx[0] = cloud.xs[pick];
      cy[0] = cloud.ys[pick];
      cz[0] = cloud.zs[pick];
    } else {
      const RoundCandidates<kRound> round =
          round_candidates<kRound>(slots, parity, {mine.key, mine.index, rest, 0u});
      candidate_points(cloud, n, round.picks, cx, cy, cz);
      const int accepted = picks_of_round(round, cx, cy, cz, npoint - picked);
      bool owner = false;
#pragma unroll
      for (int j = 0; j < kRound; ++j) {
        owner = owner || (j < accepted && round.picks[j] == mine.index);
      }
      if (owner) {
        mark_sampled(idx, mine.index, dist);
        stale = true;
      }
      if (threadIdx.x == 0) {
#pragma unroll
        for (int j = 0; j < kRound; ++j) {
          if (j < accepted) {
            picks[picked + j] = round.picks[j];
          }
        }
      }
      centres = accepted;
    }
    picked += centres;
  }
}

}  // namespace

std::size_t fps_registers_shared_bytes(std::int64_t n) {
  return with_points_per_thread<kThreads>(n, [&](auto per_thread) {
    return on_chip_shared_bytes<kThreads, decltype(per_thread)::value>(n);
  });
}

void launch_fps_registers(Lane lane, int round, const float* xyz, std::int64_t batch,
                          std::int64_t n, std::int64_t npoint, std::int64_t start,
                          std::int64_t* out, cudaStream_t stream) {
  if (batch == 0) {
    return;
  }
  if ((round != 1 && round != 2 && round != 4) || (round > 1 && lane != Lane::kTree)) {
    throw std::invalid_argument(
        "furthest_point_sample: the register kernel takes rounds of 1, 2 or 4 picks, more than "
        "one with the lane tree; got " +
        std::to_string(round) + (lane == Lane::kTree ? " with the tree" : " with the pass"));
  }
  with_points_per_thread<kThreads>(n, [&](auto per_thread) {
    constexpr int kPerThread = decltype(per_thread)::value;
    const auto kernel = round == 4            ? fps_registers_kernel<kPerThread, true, 4>
                        : round == 2          ? fps_registers_kernel<kPerThread, true, 2>
                        : lane == Lane::kTree ? fps_registers_kernel<kPerThread, true, 1>
                                              : fps_registers_kernel<kPerThread, false, 1>;
    launch_on_chip<kThreads, kPerThread>(kernel, xyz, batch, n, npoint, start, out, stream);
  });
}

}  // namespace dtrain::kernels::cuda::experimental
