// The striped FPS kernel's device helpers (furthest_point_sample_striped.cu,
// Note [FPS on registers in striped chunks] and Note [FPS in rounds of
// independent picks] there): a unit's candidate for a round, a lane's two
// largest keys, a block's entry for a cluster's round, and the order in
// which a round takes the units' candidates.
#pragma once

#include "fps_common.cuh"

namespace dtrain::kernels::cuda::fps {

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

// A block's candidate for a cluster's round (Note [FPS on a cluster of
// blocks]): its best point, the largest key among its other points, and the
// best point's coordinates, which the other blocks do not hold.
struct BlockEntry {
  RoundCandidate candidate;
  float x, y, z;
};

// The first kRound candidates of a round in order (largest key, then lowest
// index), one unit per lane (lanes without one hold key 0), each taken unit
// then out of play; with the rest of each, and (kHolders) the lane that held
// it.
template <int kRound>
struct RoundOrder {
  unsigned int keys[kRound];
  unsigned int picks[kRound];
  unsigned int rests[kRound];
  unsigned int holders[kRound];
};

template <int kRound, bool kHolders>
__device__ inline RoundOrder<kRound> take_in_order(const RoundCandidate& unit) {
  RoundOrder<kRound> order;
  unsigned int in_play = unit.key;  // 0 once the unit's candidate is taken
#pragma unroll
  for (int j = 0; j < kRound; ++j) {
    order.keys[j] = __reduce_max_sync(kFullMask, in_play);
    order.picks[j] = __reduce_min_sync(kFullMask, in_play == order.keys[j] ? unit.index : kNoIndex);
    const bool taken = unit.index == order.picks[j];
    if constexpr (kHolders) {
      order.holders[j] = __ffs(__ballot_sync(kFullMask, taken)) - 1;
    }
    if constexpr (kRound > 1) {
      order.rests[j] = __reduce_max_sync(kFullMask, taken ? unit.rest : 0u);
    }
    in_play = taken ? 0u : in_play;
  }
  return order;
}

}  // namespace dtrain::kernels::cuda::fps
