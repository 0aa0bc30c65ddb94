#!/usr/bin/env python3
"""A model of the CUDA leader FPS kernel, run on the CPU with numpy.

kernels/src/cuda/furthest_point_sample_leader.cu deals each cloud's
Morton-sorted points to the warps of one block (1024 threads of up to 8
points, or 512 of up to 16; warp w holds 32 k consecutive sorted positions)
and lets one warp make every pick (Note [FPS with one picking warp]): the
warps named in the last mask update with the centre and rewrite their slot;
the leader takes the largest key and lowest index among the slots, and names
the warps to update next: the one holding the pick, and each whose box the
centre may come nearer to than the distance its slot's key stands for. A
slot that was not rewritten keeps the candidate from its warp's last update.
This script replays that protocol in float32 with the kernel's rounded
arithmetic, updating only the warps named, and reports for each cloud and
block size:
  - whether the picks equal sequential FPS (the rule is exact, so they must),
  - the warps that update per pick and the most of them on one of the SM's
    four schedulers (warp w runs on scheduler w % 4),
  - the points a lane updates per pick in the warps that update (k).
It needs no GPU and measures the algorithm, not the kernel's speed.

    python3 benchmarks/kernels/fps_leader_model.py [--quick]
"""
import sys

import numpy as np

from fps_striped_model import (F32, NO_INDEX, THREADS, box_distance, distance_key, key_distance,
                               morton_order, replay_one_block, squared_distance)

SCHEDULERS = 4


def points_per_thread(n, threads, most):
    per_thread = 1
    while per_thread * threads < n:
        per_thread *= 2
    if per_thread > most:
        raise ValueError(f"{threads} threads hold at most {most * threads} points, got {n}")
    return per_thread


def leader_fps(points, npoint, start, threads):
    """The kernel's picks, the warps updated over all picks, and the busiest scheduler's share."""
    n = len(points)
    warps = threads // 32
    per_thread = points_per_thread(n, threads, 8 if threads == 1024 else 16)
    # morton_order pads to a multiple of the models' 512 threads.
    order = morton_order(points, per_thread * threads // THREADS).reshape(warps, -1)
    members = [w[w < n] for w in order]
    padded = np.minimum(order, n)  # the kernel's padding positions hold index n
    low = [points[m].min(0) if len(m) else np.full(3, np.inf, F32) for m in members]
    high = [points[m].max(0) if len(m) else np.full(3, -np.inf, F32) for m in members]
    running = np.full(n + 1, np.inf, F32)  # index n: padding, below every real point
    running[n] = -2
    running[start] = -1
    slots = [(0, NO_INDEX)] * warps  # each warp's (key, index); every warp writes first
    update = np.ones(warps, bool)
    pick = start
    picks = [start]
    warps_updated = busiest = 0
    for _ in range(1, npoint):
        warps_updated += int(update.sum())
        busiest += max(int(update[s::SCHEDULERS].sum()) for s in range(SCHEDULERS))
        for w in np.nonzero(update)[0]:
            m, slot_points = members[w], padded[w]
            if pick == slots[w][1]:
                running[pick] = -1
            if len(m):
                running[m] = np.minimum(running[m], squared_distance(points[pick], points[m]))
            keys = distance_key(running[slot_points])
            key = int(keys.max())
            slots[w] = (key, int(slot_points[keys == key].min()))
        top = max(key for key, _ in slots)
        pick = min(index for key, index in slots if key == top)
        centre = points[pick]
        update = np.array([index == pick or not (box_distance(centre, low[w], high[w]) >=
                                                 key_distance(key))
                           for w, (key, index) in enumerate(slots)])
        picks.append(pick)
    return picks, warps_updated, busiest


def main():
    def run(points, npoint, start, threads):
        picks, warps, busiest = leader_fps(points, npoint, start, threads)
        picks_made = max(npoint - 1, 1)
        return picks, [str(points_per_thread(len(points), threads, 16)),
                       f"{warps / picks_made:.2f}", f"{busiest / picks_made:.2f}"]

    return replay_one_block((1024, 512), "threads,equal_to_sequential,points_per_lane,"
                            "warps_updating_per_pick,busiest_scheduler_warps_per_pick", run)


if __name__ == "__main__":
    sys.exit(main())
