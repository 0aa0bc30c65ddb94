// Furthest point sampling for clouds of up to 8192 points with the points
// on chip, skipping decided per chunk of 32 points, and several picks per
// barrier when they cannot disturb one another (Note [FPS on registers in
// striped chunks], Note [FPS in rounds of independent picks]).
//
// Note [FPS on registers in striped chunks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The register kernel (Note [FPS on registers with spatial skipping]) skips
// whole warps of 512 points. Late in a run the points whose running
// distance can still shrink lie in a small ball around the new centre, yet
// every warp whose box touches that ball updates all its points: at B = 32,
// N = 8192 -> 1024 on an H200 that is ~0.4 us of its 0.72 us per pick (the
// rest, ~0.3 us, is the fixed chain of a pick: barrier, shared memory, four
// warp reductions). A model of both layouts on uniform clouds (8192 points,
// 1024 picks) updates 4.5 warps = 2300 points per pick there, 16.5 chunks =
// 530 points here, at most 2.4 chunks in any one warp.
// One block of 512 threads per cloud; each thread holds k <= 16 points:
//  - the Morton-sorted points are dealt out striped: slot s of thread t is
//    sorted position s * 512 + t, so slot s of a warp (its 32 lanes) is a
//    chunk of 32 consecutive points on the curve: compact in space;
//  - chunks near one another on the curve are the same slot of consecutive
//    warps, so the few chunks near a centre are updated by different warps
//    at the same time rather than one after another by one warp;
//  - lane s of a warp keeps the bounding box and the largest running
//    distance (as a key) of the warp's chunk s. Each round every lane tests
//    its chunk at once (the exact box test of the register kernel), a
//    ballot gathers the chunks that fail, and the warp updates those slots
//    only (an unrolled loop of warp-uniform branches: the points stay in
//    registers); each updated chunk's largest key is one integer reduction;
//  - the warp's candidate follows from its chunks' keys: the largest by a
//    reduction, its lowest index from the chunks holding that key only.
// Distances use the rounded arithmetic of Note [FPS distance], so the picks
// equal the CPU kernel's.
//
// Note [FPS in rounds of independent picks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The fixed chain of a pick is paid once per barrier; late in a run the
// next few picks are far apart and do not disturb one another, so one
// barrier can decide several, exactly. Each warp publishes its candidate c
// (largest key, lowest index) and `rest`, the largest key among its other
// points. After the barrier every warp takes the candidates in order
// (largest key, then lowest index), c1, c2, ..., each from a warp not yet
// taken, and accepts the longest prefix in which each c_j
//  - keeps its running distance D_j under the centres accepted before it:
//    !(d(c_i, c_j) < D_j) in the rounded arithmetic of the update, and
//  - outranks every point left in the warps already taken: key(c_j) is
//    above their `rest` (strictly: an equal key might hold a lower index).
// Then c_j is the furthest point once c_1..c_{j-1} are sampled: its own
// distance is unchanged, every point of a warp not yet taken ranked below it
// before and distances only shrink, and the points left in taken warps are
// below it by the second condition. So the round's picks are those of
// sequential FPS, and the update that follows applies every accepted centre
// (a chunk is skipped only when no centre is near it). At most `round`
// (1, 2 or 4) picks per barrier; a model of the kernel (picks compared with
// sequential FPS on uniform, Gaussian, clumped, grid and repeated clouds)
// averages 1.9 picks per round with 2 and 3.1 with 4 on 8192 uniform or
// Gaussian points -> 1024, and ~1 on grids, whose ties the strict rule
// rejects.

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

// A warp's candidate for a round: its best point (largest key, lowest index)
// and the largest key among its other points.
struct RoundCandidate {
  unsigned int key;
  unsigned int index;
  unsigned int rest;
};

// The largest and second largest (counting repeats) of a lane's keys, by a
// tree of pairwise merges (shallow, unlike one pass over the slots).
template <int kSlots>
__device__ inline void lane_top_two(const float (&dist)[kSlots], unsigned int& best,
                                    unsigned int& second) {
  unsigned int top[kSlots];
  unsigned int next[kSlots];
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    top[s] = distance_key(dist[s]);
    next[s] = 0;
  }
#pragma unroll
  for (int width = 1; width < kSlots; width *= 2) {
#pragma unroll
    for (int s = 0; s + width < kSlots; s += 2 * width) {
      next[s] = max(min(top[s], top[s + width]), max(next[s], next[s + width]));
      top[s] = max(top[s], top[s + width]);
    }
  }
  best = top[0];
  second = next[0];
}

template <int kSlots, int kRound>
__global__ void __launch_bounds__(kThreads)
    fps_striped_kernel(const float* __restrict__ xyz, int n, std::int64_t npoint, int start,
                       std::int64_t* __restrict__ out) {
  static_assert(kSlots < static_cast<int>(kWarp), "one lane keeps each chunk of a warp");
  static_assert(kRound >= 1 && kRound <= static_cast<int>(kWarps), "picks per round");
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ RoundCandidate slots[2][kWarps];
  __shared__ float scratch[kWarps];
  std::int64_t* picks = out + static_cast<std::int64_t>(blockIdx.x) * npoint;
  int idx[kSlots];
  const Cloud cloud = deal_cloud<kThreads, kSlots, true>(xyz, n, shared, scratch, idx);
  float px[kSlots], py[kSlots], pz[kSlots], dist[kSlots];
  point_registers(cloud, n, start, idx, px, py, pz, dist);

  const unsigned int lane = threadIdx.x % kWarp;
  // Lane s: the box of the warp's chunk s (lanes past the chunks, and chunks
  // of padding only, keep an empty box, which no centre is ever near).
  float chunk_low[3] = {INFINITY, INFINITY, INFINITY};
  float chunk_high[3] = {-INFINITY, -INFINITY, -INFINITY};
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    float box_low[3] = {INFINITY, INFINITY, INFINITY};
    float box_high[3] = {-INFINITY, -INFINITY, -INFINITY};
    if (idx[s] < n) {
      grow_box(box_low, box_high, {px[s], py[s], pz[s]});
    }
    warp_box(box_low, box_high);
    if (lane == static_cast<unsigned int>(s)) {
#pragma unroll
      for (int a = 0; a < 3; ++a) {
        chunk_low[a] = box_low[a];
        chunk_high[a] = box_high[a];
      }
    }
  }

  if (threadIdx.x == 0) {
    picks[0] = start;
  }
  // The centres of the last round (Note [FPS in rounds of independent picks]).
  float cx[kRound], cy[kRound], cz[kRound];
  cx[0] = cloud.xs[start];
  cy[0] = cloud.ys[start];
  cz[0] = cloud.zs[start];
  int centres = 1;
  RoundCandidate mine{0u, kNoIndex, 0u};
  unsigned int chunk_key = 0;                // lane s: chunk s's largest key
  float chunk_largest = INFINITY;            // ... and the running distance it stands for
  unsigned int stale = (1u << kSlots) - 1u;  // the chunks to recompute: all at first
  std::int64_t picked = 1;
  for (int round = 0; picked < npoint; ++round) {
    bool near = false;
#pragma unroll
    for (int m = 0; m < kRound; ++m) {
      if (m < centres) {
        near = near ||
               !(box_squared_distance(cx[m], cy[m], cz[m], chunk_low, chunk_high) >= chunk_largest);
      }
    }
    const unsigned int update = __ballot_sync(kFullMask, near) | stale;
    if (update != 0) {
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        if ((update >> s) & 1u) {
          float running = dist[s];
#pragma unroll
          for (int m = 0; m < kRound; ++m) {
            if (m < centres) {
              const float d = squared_distance(cx[m], cy[m], cz[m], px[s], py[s], pz[s]);
              running = d < running ? d : running;
            }
          }
          dist[s] = running;
          const unsigned int key = __reduce_max_sync(kFullMask, distance_key(running));
          if (lane == static_cast<unsigned int>(s)) {
            chunk_key = key;
          }
        }
      }
      chunk_largest = key_distance(chunk_key);
      mine.key = __reduce_max_sync(kFullMask, chunk_key);
      // Only the chunks holding the largest key can hold the candidate. (A
      // warp with nothing left to pick ends with key 0 and an index already
      // sampled or past the cloud: never a pick.)
      const unsigned int holders = __ballot_sync(
          kFullMask, lane < static_cast<unsigned int>(kSlots) && chunk_key == mine.key);
      unsigned int candidate = kNoIndex;
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        if (((holders >> s) & 1u) && distance_key(dist[s]) == mine.key) {
          candidate = min(candidate, static_cast<unsigned int>(idx[s]));
        }
      }
      mine.index = __reduce_min_sync(kFullMask, candidate);
      if constexpr (kRound > 1) {
        // The largest key besides the candidate: the key itself if another
        // lane reaches it too, else the best of the other lanes' keys and the
        // candidate lane's second.
        unsigned int best, second;
        lane_top_two(dist, best, second);
        const bool reaches = best == mine.key;
        const unsigned int others = __reduce_max_sync(kFullMask, reaches ? second : best);
        mine.rest = __popc(__ballot_sync(kFullMask, reaches)) > 1 ? mine.key : others;
      }
      stale = 0;
    }

    // The round's picks from the warps' candidates (one barrier; the slot
    // buffers alternate between rounds, as in block_pick).
    RoundCandidate* buffer = slots[round & 1];
    if (lane == 0) {
      buffer[threadIdx.x / kWarp] = mine;
    }
    __syncthreads();
    const RoundCandidate slot = lane < kWarps ? buffer[lane] : RoundCandidate{0u, kNoIndex, 0u};
    unsigned int keys[kRound], picks_now[kRound], rests[kRound];
    unsigned int in_play = slot.key;  // 0 once the warp's candidate is taken
#pragma unroll
    for (int j = 0; j < kRound; ++j) {
      keys[j] = __reduce_max_sync(kFullMask, in_play);
      picks_now[j] = __reduce_min_sync(kFullMask, in_play == keys[j] ? slot.index : kNoIndex);
      const bool taken = slot.index == picks_now[j];
      if constexpr (kRound > 1) {
        rests[j] = __reduce_max_sync(kFullMask, taken ? slot.rest : 0u);
      }
      in_play = taken ? 0u : in_play;
    }
    // Accept the longest prefix whose picks follow one another exactly.
    int accepted = 1;
    cx[0] = cloud.xs[picks_now[0]];
    cy[0] = cloud.ys[picks_now[0]];
    cz[0] = cloud.zs[picks_now[0]];
    if constexpr (kRound > 1) {
      unsigned int rest_taken = rests[0];
#pragma unroll
      for (int j = 1; j < kRound; ++j) {
        const unsigned int pick = picks_now[j] < static_cast<unsigned int>(n) ? picks_now[j] : 0u;
        cx[j] = cloud.xs[pick];
        cy[j] = cloud.ys[pick];
        cz[j] = cloud.zs[pick];
        const float running = key_distance(keys[j]);
        bool follows = accepted == j && keys[j] > rest_taken && picked + j < npoint;
#pragma unroll
        for (int i = 0; i < j; ++i) {
          follows =
              follows && !(squared_distance(cx[i], cy[i], cz[i], cx[j], cy[j], cz[j]) < running);
        }
        accepted = follows ? j + 1 : accepted;
        rest_taken = max(rest_taken, rests[j]);
      }
    }
    if (threadIdx.x == 0) {
#pragma unroll
      for (int j = 0; j < kRound; ++j) {
        if (j < accepted) {
          picks[picked + j] = picks_now[j];
        }
      }
    }
    // A warp gives at most one pick a round: the one that was its candidate.
    bool owner = false;
#pragma unroll
    for (int j = 0; j < kRound; ++j) {
      owner = owner || (j < accepted && picks_now[j] == mine.index);
    }
    if (owner) {
      unsigned int chunk = 0;  // the picked point's slot + 1 in its lane, else 0
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        if (static_cast<unsigned int>(idx[s]) == mine.index) {
          dist[s] = -1.0f;
          chunk = s + 1;
        }
      }
      stale = 1u << (__reduce_max_sync(kFullMask, chunk) - 1);
    }
    centres = accepted;
    picked += accepted;
  }
}

}  // namespace

std::size_t fps_striped_shared_bytes(std::int64_t n) {
  return with_points_per_thread<kThreads>(n, [&](auto per_thread) {
    return on_chip_shared_bytes<kThreads, decltype(per_thread)::value>(n);
  });
}

void launch_fps_striped(int round, const float* xyz, std::int64_t batch, std::int64_t n,
                        std::int64_t npoint, std::int64_t start, std::int64_t* out,
                        cudaStream_t stream) {
  if (batch == 0) {
    return;
  }
  with_points_per_thread<kThreads>(n, [&](auto per_thread) {
    constexpr int kSlots = decltype(per_thread)::value;
    const auto kernel = round >= 4   ? fps_striped_kernel<kSlots, 4>
                        : round == 2 ? fps_striped_kernel<kSlots, 2>
                                     : fps_striped_kernel<kSlots, 1>;
    launch_on_chip<kThreads, kSlots>(kernel, xyz, batch, n, npoint, start, out, stream);
  });
}

}  // namespace dtrain::kernels::cuda
