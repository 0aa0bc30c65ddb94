// What the experimental on-chip FPS kernels add to the helpers they share
// with the default ones (kernels/src/cuda/fps_on_chip.cuh): the block's pick
// from slots indexed in place, and how many of a round's candidates follow
// one another as sequential FPS would pick them.
#pragma once

#include <cstdint>

#include "fps_common.cuh"
#include "fps_on_chip.cuh"
#include "point_common.cuh"

namespace dtrain::kernels::cuda::fps {

// The block's pick from every warp's candidate: the largest key, ties to
// the lowest index. One barrier; the two rows of `slots` alternate from one
// pick to the next (`parity`), so that a fast warp's next write never lands
// in a slot another warp is still reading. The array is indexed as itself,
// not through a pointer, and with no branch on the lane: every lane of a
// warp stores the same candidate to its slot (one store), and lane l reads
// slot l % kWarps (the upper lanes' duplicates, where kWarps < 32, change
// neither the largest key nor the lowest index). So its address is
// arithmetic on values the warp already holds rather than special-register
// reads on each side of the barrier (fps_on_chip.cuh's block_pick, which the
// default register kernel runs, reads both).
template <unsigned int kWarps>
__device__ inline unsigned int block_pick(WarpCandidate (&slots)[2][kWarps], unsigned int parity,
                                          const WarpCandidate& mine) {
  const unsigned int lane = threadIdx.x % kWarp;
  slots[parity][threadIdx.x / kWarp] = mine;
  __syncthreads();
  const WarpCandidate slot = slots[parity][lane % kWarps];
  const unsigned int key = __reduce_max_sync(kFullMask, slot.key);
  return __reduce_min_sync(kFullMask, slot.key == key ? slot.index : kNoIndex);
}

// How many of a round's candidates sequential FPS would pick in turn (Note
// [FPS in rounds of independent picks] in furthest_point_sample_striped.cu):
// the first always; candidate j while every one before it followed,
// next_in_order[j] holds (the caller's own test that j is the next in that
// order), its key is above the rest of every unit taken before it, picks
// remain (j < room), and no earlier candidate comes closer to it than its
// running distance. (cx, cy, cz)[j] is candidate j's point.
template <int kRound>
__device__ inline int picks_that_follow(const unsigned int (&keys)[kRound],
                                        const unsigned int (&rests)[kRound],
                                        const bool (&next_in_order)[kRound],
                                        const float (&cx)[kRound], const float (&cy)[kRound],
                                        const float (&cz)[kRound], std::int64_t room) {
  if constexpr (kRound == 1) {
    return 1;
  } else {
    int accepted = 1;
    unsigned int rest_taken = rests[0];
#pragma unroll
    for (int j = 1; j < kRound; ++j) {
      const float running = key_distance(keys[j]);
      bool follows = accepted == j && next_in_order[j] && keys[j] > rest_taken && j < room;
#pragma unroll
      for (int i = 0; i < j; ++i) {
        follows =
            follows && !(squared_distance(cx[i], cy[i], cz[i], cx[j], cy[j], cz[j]) < running);
      }
      accepted = follows ? j + 1 : accepted;
      rest_taken = max(rest_taken, rests[j]);
    }
    return accepted;
  }
}

}  // namespace dtrain::kernels::cuda::fps
