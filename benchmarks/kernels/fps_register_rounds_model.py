#!/usr/bin/env python3
"""A model of the CUDA register FPS kernel taking rounds of one, two or four
picks per barrier, run on the CPU with numpy.

kernels/src/cuda/furthest_point_sample_registers.cu deals each cloud's
Morton-sorted points to 16 warps of 512 consecutive points (thread t holds
sorted positions 16 t .. 16 t + 15) and updates only the warps whose
bounding box a new centre may come closer to than their largest running
distance. With DTRAIN_CUDA_FPS_ROUND=2 or 4 each warp also publishes
`rest`, the largest key among its points besides its candidate, and one
barrier takes the best candidates of different warps in order while none
can be disturbed by those before it (Note [FPS in rounds of independent
picks] in furthest_point_sample_striped.cu, with the register kernel's
warps as the units, stopping after a key that two warps hold). This script
replays that rule in float32 with the kernels' rounded arithmetic and
reports for each cloud:
  - whether the picks equal sequential FPS (the rule is exact, so they must),
  - the picks per round (how often one barrier decides two),
  - the warps that update per round (near a centre, or the owner of a pick)
    and the most of them on one of the SM's four schedulers (warp w runs on
    scheduler w % 4), which bounds how much of the update runs side by side.
It needs no GPU and measures the algorithm, not the kernel's speed.

    python3 benchmarks/kernels/fps_register_rounds_model.py [--quick]
"""
import sys

import numpy as np

from fps_striped_model import (F32, THREADS, WARPS, box_distance, distance_key, morton_order,
                               replay_one_block, squared_distance, take_round)

SCHEDULERS = 4


def warp_units(running, members):
    """Each warp's (key, index, rest): its largest key, the lowest index holding it, and the
    largest key among its other points (counting repeats)."""
    units = []
    for m in members:
        keys = distance_key(running[m]) if len(m) else np.zeros(1, np.int64)
        key = int(keys.max())
        index = int(m[keys == key].min()) if len(m) else len(running)
        rest = int(np.sort(keys)[-2]) if len(keys) > 1 else 0
        units.append((key, index, rest))
    return units


def taken_before_a_tie(units, new):
    """How many of a round's picks the kernel keeps: it stops after a pick whose key another
    warp still in play holds too (its next key would skip that warp)."""
    in_play = list(units)
    for j, index in enumerate(new):
        unit = next(u for u in in_play if u[1] == index)
        if sum(u[0] == unit[0] for u in in_play) > 1:
            return j + 1
        in_play.remove(unit)
    return len(new)


def register_rounds(points, npoint, start, round_size):
    """The kernel's picks, its rounds, the warps updated and the busiest scheduler's share."""
    n = len(points)
    slots = 1
    while slots * THREADS < n:
        slots *= 2
    order = morton_order(points, slots).reshape(WARPS, -1)
    members = [w[w < n] for w in order]
    low = [points[m].min(0) if len(m) else np.full(3, np.inf, F32) for m in members]
    high = [points[m].max(0) if len(m) else np.full(3, -np.inf, F32) for m in members]
    running = np.full(n, np.inf, F32)
    running[start] = -1
    picks, centres, owners = [start], [start], set()
    rounds, warps_updated, busiest = 0, 0, 0
    while len(picks) < npoint:
        rounds += 1
        updating = np.zeros(WARPS, bool)
        for w, m in enumerate(members):
            largest = running[m].max() if len(m) else F32(-2)
            near = any(not (box_distance(points[c], low[w], high[w]) >= largest) for c in centres)
            updating[w] = near or w in owners
        warps_updated += int(updating.sum())
        busiest += max(int(updating[s::SCHEDULERS].sum()) for s in range(SCHEDULERS))
        for c in centres:
            running = np.minimum(running, squared_distance(points[c], points))
        running[picks] = -1
        units = warp_units(running, members)
        new = take_round(units, points, len(picks), npoint, round_size)
        new = new[:taken_before_a_tie(units, new)]
        owners = {w for w, u in enumerate(units) if u[1] in new}
        picks += new
        centres = new
    return picks, rounds, warps_updated, busiest


def main():
    def run(points, npoint, start, round_size):
        picks, rounds, warps, busiest = register_rounds(points, npoint, start, round_size)
        rounds = max(rounds, 1)
        return picks, [f"{(npoint - 1) / rounds:.2f}", f"{warps / rounds:.2f}",
                       f"{busiest / rounds:.2f}"]

    return replay_one_block((1, 2, 4), "round,equal_to_sequential,picks_per_round,"
                            "warps_updating_per_round,busiest_scheduler_warps_per_round", run)


if __name__ == "__main__":
    sys.exit(main())
