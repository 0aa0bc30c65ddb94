#!/usr/bin/env python3
"""Where a one-block FPS kernel updates points, for two ways of dealing a
cloud's Morton-sorted points to a warp's lanes, run on the CPU with numpy.

Both layouts cut each warp's points into chunks of 32 (one slot of its 32
lanes), keep each chunk's bounding box and largest running distance, and
update a chunk only when the new centre may come closer than that distance
(the exact test of Note [FPS on registers in striped chunks]):
  - striped (furthest_point_sample_striped.cu): slot s of warp w is sorted
    position s * 512 + 32 w + l, so neighbouring chunks on the curve belong
    to different warps;
  - rows (furthest_point_sample_rows.cu): slot s of warp w is position
    512 w + 32 s + l, so a warp's 16 chunks are one stretch of the curve and
    the chunks near a centre mostly belong to one or two warps.
A warp that updates any chunk pays the update branch's fixed cost (its
candidate's reductions) once, and each of its chunks in turn, so the
numbers that matter for one pick's latency are how many warps take the
branch and the most chunks any one of them updates. Skipping is exact, so
the running distances are sequential FPS's at every pick; the model asserts
that no point of a skipped chunk would have come closer.

    python3 benchmarks/kernels/fps_rows_model.py [--quick]
"""
import sys

import numpy as np

from fps_striped_model import (F32, THREADS, WARPS, box_distance, morton_order,
                               one_block_clouds, squared_distance)

LAYOUTS = ("striped", "rows")


def dealt(order, slots, layout):
    """[warp][slot][lane] -> sorted position, for a block of 512 threads."""
    w, s, l = np.meshgrid(np.arange(WARPS), np.arange(slots), np.arange(32), indexing="ij")
    if layout == "striped":
        return s * THREADS + 32 * w + l
    return 32 * slots * w + 32 * s + l


def chunk_updates(points, npoint, start, layout):
    """Runs sequential FPS beside the chunk test; returns the picks and, per pick, the chunks
    updated,
    the warps that updated any, and the most chunks one warp updated."""
    n = len(points)
    slots = 1
    while slots * THREADS < n:
        slots *= 2
    order = morton_order(points, slots)
    index = order[dealt(order, slots, layout)]  # [warp][slot][lane]; >= n: padding
    real = index < n
    safe = np.minimum(index, n - 1)
    xyz = points[safe]
    low = np.where(real[..., None], xyz, np.inf).min(2).astype(F32)  # [warp][slot][3]
    high = np.where(real[..., None], xyz, -np.inf).max(2).astype(F32)
    running = np.full(n, np.inf, F32)
    running[start] = -1
    picks = [start]
    chunks, warps, most = [], [], []
    for _ in range(1, npoint):
        centre = points[picks[-1]]
        largest = np.where(real, running[safe], F32(-2)).max(2)  # [warp][slot]
        owner = (index == picks[-1]).any(2)  # the pick's own chunk must mark it sampled
        near = owner | ~(box_distance(centre, low, high) >= largest)
        update = squared_distance(centre, points)
        # A point in no near chunk must not come closer: the test is exact.
        touched = index[near]
        untouched = np.ones(n, bool)
        untouched[touched[touched < n]] = False
        closer = update < running
        assert not (closer & untouched & (running >= 0)).any(), "a skipped point came closer"
        running = np.where(closer, update, running)
        running[picks] = -1
        per_warp = near.sum(1)
        chunks.append(int(near.sum()))
        warps.append(int((per_warp > 0).sum()))
        most.append(int(per_warp.max()))
        picks.append(int(np.argmax(running)))  # first maximum: lowest index
    return picks, np.array(chunks), np.array(warps), np.array(most)


def main():
    quick = "--quick" in sys.argv
    clouds = one_block_clouds(np.random.default_rng(0))
    if quick:
        clouds = clouds[:1]
    print("cloud,n,npoint,layout,chunks_updated_per_pick,warps_updating_per_pick,"
          "most_chunks_in_one_warp_per_pick,most_chunks_in_one_warp_p90")
    for name, points, npoint, start in clouds:
        for layout in LAYOUTS:
            _, chunks, warps, most = chunk_updates(points, npoint, start, layout)
            print(f"{name},{len(points)},{npoint},{layout},{chunks.mean():.1f},"
                  f"{warps.mean():.2f},{most.mean():.2f},{np.percentile(most, 90):.0f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
