// What the FPS kernels that keep each thread's points in registers share
// (furthest_point_sample_registers.cu, furthest_point_sample_leader.cu):
// the box around a warp's points, a thread's update of its points' running
// distances, the mark of a pick among them, a warp's candidate, and the
// order of a round's candidates (Note [FPS on registers in rounds of picks]
// in furthest_point_sample_registers.cu).
#pragma once

#include "fps_common.cuh"
#include "fps_on_chip.cuh"
#include "fps_on_chip_rounds.cuh"
#include "point_common.cuh"

namespace dtrain::kernels::cuda::fps {

// The box around the real points (idx < n) of every thread of the warp;
// every lane gets it. A warp of padding only has an empty box (low +inf,
// high -inf), which no centre comes near.
template <int kPerThread>
__device__ inline void points_warp_box(const int (&idx)[kPerThread], int n,
                                       const float (&px)[kPerThread], const float (&py)[kPerThread],
                                       const float (&pz)[kPerThread], float (&low)[3],
                                       float (&high)[3]) {
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    low[a] = INFINITY;
    high[a] = -INFINITY;
  }
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    if (idx[s] < n) {
      grow_box(low, high, {px[s], py[s], pz[s]});
    }
  }
  warp_box(low, high);
}

// dist = min(dist, distance from the centre) for a thread's points, in the
// rounded arithmetic of Note [FPS distance]. fminf is one instruction where
// the CPU's `d < dist ? d : dist` is two, and the same here: they differ
// only when dist is NaN, and a running distance never is (+inf, a distance,
// -1 or -2); a NaN d keeps dist in both.
template <int kPerThread>
__device__ inline void update_distances(float cx, float cy, float cz, const float (&px)[kPerThread],
                                        const float (&py)[kPerThread],
                                        const float (&pz)[kPerThread], float (&dist)[kPerThread]) {
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    dist[s] = fminf(squared_distance(cx, cy, cz, px[s], py[s], pz[s]), dist[s]);
  }
}

// The point `pick`, if this thread holds it, is sampled now: its running
// distance becomes -1, below every point still to pick.
template <int kPerThread>
__device__ inline void mark_sampled(const int (&idx)[kPerThread], unsigned int pick,
                                    float (&dist)[kPerThread]) {
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    if (idx[s] == static_cast<int>(pick)) {
      dist[s] = -1.0f;
    }
  }
}

// A warp's entry for a round of picks: its candidate and its rest (16 bytes,
// one shared-memory load).
struct alignas(16) RoundSlot {
  unsigned int key;
  unsigned int index;
  unsigned int rest;  // the largest key among the warp's other points
  unsigned int unused;
};

// The candidates of a round, in order: keys[j] is the largest key among
// the warps' slots below keys[j - 1], picks[j] the lowest index holding it,
// rests[j] the rest of the warp it came from, and alone[j] whether one warp
// holds keys[j]. While each key is held by one warp, this is the order in
// which Note [FPS in rounds of independent picks] takes the warps'
// candidates; after a tie it is not, and the round stops there.
template <int kRound>
struct RoundCandidates {
  unsigned int keys[kRound];
  unsigned int picks[kRound];  // kNoIndex, or an index already sampled, past the last real one
  unsigned int rests[kRound];
  bool alone[kRound];
};

// This warp's entry from each thread's furthest point (`best`, at index
// `candidate`) and, with kRest, its runner-up `second`: the largest key,
// the lowest index holding it and (kRest) the warp's rest, the largest key
// among its other points: the candidate's thread gives its runner-up, the
// others their best, and a second thread reaching the key means a repeat.
template <bool kRest>
__device__ inline RoundSlot warp_slot(float best, unsigned int candidate, float second) {
  const unsigned int key = distance_key(best);
  RoundSlot mine{};
  mine.key = __reduce_max_sync(kFullMask, key);
  mine.index = __reduce_min_sync(kFullMask, key == mine.key ? candidate : kNoIndex);
  if constexpr (kRest) {
    const bool reaches = key == mine.key;
    const unsigned int others = __reduce_max_sync(kFullMask, reaches ? distance_key(second) : key);
    mine.rest = __popc(__ballot_sync(kFullMask, reaches)) > 1 ? mine.key : others;
  }
  return mine;
}

// The round's candidates from the warps' slots, lane l holding slot
// l % kWarps (the lanes past kWarps repeat the first ones). Each key is one
// warp reduction after the one before; a candidate's index, rest and tie
// test then take one reduction each, in parallel.
template <int kRound, unsigned int kWarps>
__device__ inline RoundCandidates<kRound> round_order(const RoundSlot& slot) {
  static_assert(kWarps <= kWarp, "one lane per slot at least");
  // The lanes reading distinct slots.
  constexpr unsigned int kSlotLanes = kWarps == kWarp ? kFullMask : (1u << kWarps) - 1u;
  RoundCandidates<kRound> round;
#pragma unroll
  for (int j = 0; j < kRound; ++j) {
    const bool below = j == 0 || slot.key < round.keys[j > 0 ? j - 1 : 0];
    round.keys[j] = __reduce_max_sync(kFullMask, below ? slot.key : 0u);
    const bool top = slot.key == round.keys[j];
    round.picks[j] = __reduce_min_sync(kFullMask, top ? slot.index : kNoIndex);
    round.rests[j] = __reduce_max_sync(kFullMask, top ? slot.rest : 0u);
    round.alone[j] = __popc(__ballot_sync(kFullMask, top) & kSlotLanes) == 1;
  }
  return round;
}

// The coordinates of a round's candidates (one past the last real one, an
// index n or above, reads point 0).
template <int kRound>
__device__ inline void candidate_points(const Cloud& cloud, int n,
                                        const unsigned int (&candidates)[kRound],
                                        float (&cx)[kRound], float (&cy)[kRound],
                                        float (&cz)[kRound]) {
#pragma unroll
  for (int j = 0; j < kRound; ++j) {
    const unsigned int at = candidates[j] < static_cast<unsigned int>(n) ? candidates[j] : 0u;
    cx[j] = cloud.xs[at];
    cy[j] = cloud.ys[at];
    cz[j] = cloud.zs[at];
  }
}

// How many of the round's candidates, at (cx, cy, cz), sequential FPS would
// pick in turn, at most `room` (picks_that_follow); after a key two warps
// hold, the next key skips one of them, so the round stops there.
template <int kRound>
__device__ inline int picks_of_round(const RoundCandidates<kRound>& round,
                                     const float (&cx)[kRound], const float (&cy)[kRound],
                                     const float (&cz)[kRound], std::int64_t room) {
  bool next_in_order[kRound];
#pragma unroll
  for (int j = 0; j < kRound; ++j) {
    next_in_order[j] = j == 0 || round.alone[j > 0 ? j - 1 : 0];
  }
  return picks_that_follow(round.keys, round.rests, next_in_order, cx, cy, cz, room);
}

}  // namespace dtrain::kernels::cuda::fps
