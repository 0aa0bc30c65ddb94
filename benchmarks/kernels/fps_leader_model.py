#!/usr/bin/env python3
"""A model of the CUDA leader FPS kernel, run on the CPU with numpy.

kernels/src/cuda/furthest_point_sample_leader.cu deals each cloud's
Morton-sorted points to the warps of one block (1024 threads of up to 8
points, or 512 of up to 16; warp w holds 32 k consecutive sorted positions)
and lets one warp make every pick (Note [FPS with one picking warp]): the
warps named for a centre of the last round mark the pick they held, update
with it and rewrite their slot; the leader takes the largest key and lowest
index among the slots (in rounds of two or four, on 512 threads, the
candidates the register kernel's rule accepts: take_round and
taken_before_a_tie), and names for each centre the warps to update with it:
the one holding the pick, and each whose box the centre may come nearer to
than the distance its slot's key stands for. A slot that was not rewritten
keeps the candidate from its warp's last update. This script replays that
protocol in float32 with the kernel's rounded arithmetic, updating only the
warps named, and reports for each cloud and setting (threads, round):
  - whether the picks equal sequential FPS (the rules are exact, so they must),
  - the points a lane holds, the picks per round,
  - the warps that update per round and the most of them on one of the SM's
    four schedulers (warp w runs on scheduler w % 4).
It needs no GPU and measures the algorithm, not the kernel's speed.

    python3 benchmarks/kernels/fps_leader_model.py [--quick]
"""
import sys

import numpy as np

from fps_register_rounds_model import taken_before_a_tie
from fps_striped_model import (F32, NO_INDEX, THREADS, box_distance, distance_key, key_distance,
                               morton_order, replay_one_block, squared_distance, take_round)

SCHEDULERS = 4


def points_per_thread(n, threads, most):
    per_thread = 1
    while per_thread * threads < n:
        per_thread *= 2
    if per_thread > most:
        raise ValueError(f"{threads} threads hold at most {most * threads} points, got {n}")
    return per_thread


def slot_of(running, slot_points):
    """A warp's slot: its largest key, the lowest index holding it, and its rest (the
    largest key among its other points, counting repeats)."""
    keys = distance_key(running[slot_points])
    key = int(keys.max())
    rest = int(np.sort(keys)[-2]) if len(keys) > 1 else 0
    return key, int(slot_points[keys == key].min()), rest


def leader_fps(points, npoint, start, threads, round_size):
    """The kernel's picks, its rounds, the warps updated over all rounds, and the busiest
    scheduler's share."""
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
    slots = [(0, NO_INDEX, 0)] * warps  # each warp's (key, index, rest); every warp writes first
    # The last round's picks, and for each the warps named to update with its centre.
    centres = [start]
    named = [np.ones(warps, bool)]
    picks = [start]
    rounds = warps_updated = busiest = 0
    while len(picks) < npoint:
        rounds += 1
        updating = np.logical_or.reduce(named)
        warps_updated += int(updating.sum())
        busiest += max(int(updating[s::SCHEDULERS].sum()) for s in range(SCHEDULERS))
        for w in np.nonzero(updating)[0]:
            m = members[w]
            for c, names in zip(centres, named):
                if not names[w]:
                    continue
                if c == slots[w][1]:
                    running[c] = -1
                if len(m):
                    running[m] = np.minimum(running[m], squared_distance(points[c], points[m]))
            slots[w] = slot_of(running, padded[w])
        if round_size == 1:
            top = max(key for key, _, _ in slots)
            new = [min(index for key, index, _ in slots if key == top)]
        else:
            new = take_round(slots, points, len(picks), npoint, round_size)
            new = new[:taken_before_a_tie(slots, new)]
        named = [np.array([index == c or not (box_distance(points[c], low[w], high[w]) >=
                                              key_distance(key))
                           for w, (key, index, _) in enumerate(slots)]) for c in new]
        centres = new
        picks += new
    return picks, rounds, warps_updated, busiest


def main():
    def run(points, npoint, start, setting):
        threads, round_size = setting
        picks, rounds, warps, busiest = leader_fps(points, npoint, start, threads, round_size)
        rounds = max(rounds, 1)
        return picks, [str(points_per_thread(len(points), threads, 16)),
                       f"{(npoint - 1) / rounds:.2f}", f"{warps / rounds:.2f}",
                       f"{busiest / rounds:.2f}"]

    return replay_one_block(((1024, 1), (512, 1), (512, 2), (512, 4)),
                            "threads,round,equal_to_sequential,points_per_lane,picks_per_round,"
                            "warps_updating_per_round,busiest_scheduler_warps_per_round", run,
                            label=lambda setting: f"{setting[0]},{setting[1]}")


if __name__ == "__main__":
    sys.exit(main())
