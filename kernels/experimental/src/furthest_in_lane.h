// The furthest of the few points one GPU thread holds in registers, by a
// tree rather than a pass (Note [A lane's furthest point by a tree]); host
// and device code, so that the CPU tests check it against a brute force.
//
// Note [A lane's furthest point by a tree]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// In the register FPS kernel each thread holds up to 16 points and, after
// updating their running distances, finds the largest and the lowest index
// holding it (ties go to the lowest index everywhere, Note [FPS distance]).
// Done as a pass, that is a chain of 16 dependent maxima and then a second
// chain of 16 dependent compare-and-selects for the index: ~32 steps of ALU
// latency on the path every pick waits for, in the few warps near the new
// centre, with no other work on their scheduler to hide it (Nsight Compute:
// a third of the kernel's warp time waits at the pick's barrier for them).
// A tree of pairwise merges is 4 steps deep for 16 points and carries the
// index with the value, but a merge must know which side holds the lower
// index on a tie. So the thread's indices are sorted once, before the
// first pick (sort_in_registers: a bitonic network on compile-time
// positions, so the array stays in registers), and every merge keeps its
// left operand unless the right one is strictly larger: on equal values
// the left, lower, index wins, as the pass would choose.
#pragma once

#include "host_device.h"

namespace dtrain::kernels::detail {

// Sorts v ascending with a bitonic network. kSize: a power of two. Every
// position is a compile-time constant once unrolled.
template <int kSize>
DTRAIN_HOST_DEVICE inline void sort_in_registers(int (&v)[kSize]) {
  static_assert(kSize > 0 && (kSize & (kSize - 1)) == 0, "a bitonic network sorts 2^k values");
  DTRAIN_UNROLL
  for (int block = 2; block <= kSize; block *= 2) {
    DTRAIN_UNROLL
    for (int stride = block / 2; stride > 0; stride /= 2) {
      DTRAIN_UNROLL
      for (int i = 0; i < kSize; ++i) {
        const int j = i ^ stride;
        if (j > i) {
          const bool ascending = (i & block) == 0;
          const int low = v[i] < v[j] ? v[i] : v[j];
          const int high = v[i] < v[j] ? v[j] : v[i];
          v[i] = ascending ? low : high;
          v[j] = ascending ? high : low;
        }
      }
    }
  }
}

// Below every running distance (sampled points hold -1, padding -2): what a
// thread's "other" points give when there are none.
constexpr float kBelowEveryDistance = -3.0f;

// The largest of dist and, among the positions holding it, the lowest
// index (idx[s] is position s's index), and `second`: the largest distance
// at the other positions (equal to `furthest` where two positions hold it;
// kBelowEveryDistance for one position), which rounds of picks need for a
// warp's rest (Note [FPS on registers in rounds of picks] in
// cuda/furthest_point_sample_registers.cu). Requires idx ascending (see
// sort_in_registers) and no NaN in dist (running distances never are: an
// update with a NaN distance keeps the old value). kSize: a power of two.
// Each merge keeps its left operand unless the right one is strictly larger
// (so on equal values the lower index), and the larger of the loser's
// furthest and the winner's second.
template <int kSize>
DTRAIN_HOST_DEVICE inline void furthest_two_in_registers(const float (&dist)[kSize],
                                                         const int (&idx)[kSize], float& furthest,
                                                         int& index, float& second) {
  static_assert(kSize > 0 && (kSize & (kSize - 1)) == 0, "a tree of pairs merges 2^k values");
  float top[kSize];
  float next[kSize];
  int at[kSize];
  DTRAIN_UNROLL
  for (int s = 0; s < kSize; ++s) {
    top[s] = dist[s];
    next[s] = kBelowEveryDistance;
    at[s] = idx[s];
  }
  DTRAIN_UNROLL
  for (int width = 1; width < kSize; width *= 2) {
    DTRAIN_UNROLL
    for (int s = 0; s + width < kSize; s += 2 * width) {
      const bool right = top[s + width] > top[s];  // strictly larger: ties keep the left
      const float loser = right ? top[s] : top[s + width];
      const float runner_up = right ? next[s + width] : next[s];
      next[s] = loser > runner_up ? loser : runner_up;
      top[s] = right ? top[s + width] : top[s];
      at[s] = right ? at[s + width] : at[s];
    }
  }
  furthest = top[0];
  index = at[0];
  second = next[0];
}

// The furthest point alone: the same tree, whose runner-up the compiler
// drops where nothing reads it.
template <int kSize>
DTRAIN_HOST_DEVICE inline void furthest_in_registers(const float (&dist)[kSize],
                                                     const int (&idx)[kSize], float& furthest,
                                                     int& index) {
  float unused = 0.0f;
  furthest_two_in_registers(dist, idx, furthest, index, unused);
}

}  // namespace dtrain::kernels::detail
