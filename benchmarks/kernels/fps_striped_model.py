#!/usr/bin/env python3
"""A model of the CUDA striped FPS kernel, run on the CPU with numpy.

kernels/src/cuda/furthest_point_sample_striped.cu decides which chunks to
update, and how many picks one barrier may take, with exact rules (Note [FPS
on registers in striped chunks], Note [FPS in rounds of independent picks]).
This script replays those rules warp by warp, in float32 with the kernel's
rounded arithmetic, and reports for each cloud:
  - whether the picks equal sequential FPS (the rules are exact, so they must),
  - the picks per round (how often one barrier decides more than one pick),
  - the points updated per pick, against the register kernel's whole warps.
It needs no GPU and measures the algorithm, not the kernel's speed.

    python3 benchmarks/kernels/fps_striped_model.py [--quick]
"""
import sys

import numpy as np

F32 = np.float32
THREADS = 512
WARPS = THREADS // 32
NO_INDEX = 2**32 - 1


def squared_distance(q, p):
    """Note [FPS distance]: point minus query, x*x + y*y + z*z left to right."""
    d = (p - q).astype(F32)
    xy = ((d[..., 0] * d[..., 0]).astype(F32) + (d[..., 1] * d[..., 1]).astype(F32)).astype(F32)
    return (xy + (d[..., 2] * d[..., 2]).astype(F32)).astype(F32)


def distance_key(v):
    v = np.asarray(v, dtype=F32)
    return np.where(v >= 0, v.view(np.uint32).astype(np.int64) + 1, 0)


def key_distance(k):
    k = np.asarray(k, dtype=np.int64)
    return np.where(k > 0, (np.maximum(k, 1) - 1).astype(np.uint32).view(F32), F32(-1))


def sequential_fps(points, npoint, start):
    dist = np.full(len(points), np.inf, F32)
    picks = [start]
    for _ in range(1, npoint):
        dist = np.minimum(dist, squared_distance(points[picks[-1]], points))
        dist[picks] = -1
        picks.append(int(np.argmax(dist)))  # first maximum: lowest index
    return picks


def spread_bits(v):
    v = v.astype(np.uint64) & 0x3FF
    for shift, mask in ((16, 0x030000FF), (8, 0x0300F00F), (4, 0x030C30C3), (2, 0x09249249)):
        v = (v | (v << shift)) & mask
    return v


def morton_order(points, slots):
    low, high = points.min(0), points.max(0)
    extent = (high - low).astype(F32)
    scale = (F32(1023) / np.where(extent > 0, extent, 1)).astype(F32)
    scaled = np.where(extent > 0, ((points - low).astype(F32) * scale).astype(F32), 0)
    cell = np.clip(scaled, 0, 1023).astype(np.uint32)
    codes = np.full(slots * THREADS, 1 << 30, np.uint64)
    codes[: len(points)] = spread_bits(cell[:, 0]) | (spread_bits(cell[:, 1]) << 1) | (
        spread_bits(cell[:, 2]) << 2)
    return np.argsort(codes, kind="stable")  # sorted position -> index (>= n: padding)


def box_distance(centre, low, high):
    return squared_distance(centre, np.minimum(np.maximum(centre, low), high))


def striped_fps(points, npoint, start, round_size):
    """The kernel's picks, its rounds, the chunks it updated, and the warps the register
    kernel's layout would update for the same centres."""
    n = len(points)
    slots = 1
    while slots * THREADS < n:
        slots *= 2
    order = morton_order(points, slots)
    # Point (warp w, slot s, lane l) sits at sorted position s * 512 + 32 w + l.
    idx = np.array([[order[s * THREADS + 32 * w: s * THREADS + 32 * w + 32]
                     for s in range(slots)] for w in range(WARPS)])
    real = idx < n
    xyz = np.where(real[..., None], points[np.minimum(idx, n - 1)], 0).astype(F32)
    dist = np.where(real, np.where(idx == start, F32(-1), F32(np.inf)), F32(-2)).astype(F32)
    chunk_low = np.where(real[..., None], xyz, np.inf).min(2).astype(F32)
    chunk_high = np.where(real[..., None], xyz, -np.inf).max(2).astype(F32)
    chunk_key = np.zeros((WARPS, slots), np.int64)
    chunk_largest = np.full((WARPS, slots), np.inf, F32)
    stale = np.ones((WARPS, slots), bool)
    # The register kernel's warps: 32 * slots consecutive sorted positions each.
    blocked = order.reshape(WARPS, -1)
    warp_low = np.array([points[b[b < n]].min(0) if (b < n).any() else [np.inf] * 3
                         for b in blocked], F32)
    warp_high = np.array([points[b[b < n]].max(0) if (b < n).any() else [-np.inf] * 3
                          for b in blocked], F32)
    mine = [(0, NO_INDEX, 0)] * WARPS
    centres, picks, rounds, chunks_updated, warps_updated = [points[start]], [start], 0, 0, 0
    running = np.full(n, np.inf, F32)
    running[start] = -1
    while len(picks) < npoint:
        rounds += 1
        # The register kernel on the same centres: whole warps near a centre.
        for w, b in enumerate(blocked):
            b = b[b < n]
            largest = running[b].max() if len(b) else F32(-2)
            if any(not (box_distance(c, warp_low[w], warp_high[w]) >= largest) for c in centres):
                warps_updated += 1
        for c in centres:
            running = np.minimum(running, squared_distance(c, points))
        running[picks] = -1
        # This kernel: chunks near a centre, then each warp's candidate and rest.
        for w in range(WARPS):
            near = stale[w].copy()
            for c in centres:
                near |= ~(box_distance(c, chunk_low[w], chunk_high[w]) >= chunk_largest[w])
            if not near.any():
                continue
            for s in np.nonzero(near)[0]:
                for c in centres:
                    d = squared_distance(c, xyz[w, s])
                    dist[w, s] = np.where(d < dist[w, s], d, dist[w, s])
                chunk_key[w, s] = distance_key(dist[w, s]).max()
            chunks_updated += int(near.sum())
            chunk_largest[w] = key_distance(chunk_key[w])
            key = int(chunk_key[w].max())
            candidate = NO_INDEX
            for s in np.nonzero(chunk_key[w] == key)[0]:
                holds = distance_key(dist[w, s]) == key
                if holds.any():
                    candidate = min(candidate, int(idx[w, s][holds].min()))
            lane_keys = np.sort(distance_key(dist[w]), axis=0)
            best = lane_keys[-1]
            second = lane_keys[-2] if slots > 1 else np.zeros(32, np.int64)
            reaches = best == key
            rest = key if reaches.sum() > 1 else int(np.where(reaches, second, best).max())
            mine[w] = (key, candidate, rest)
            stale[w] = False
        # The block's round: candidates in order, the longest exact prefix.
        keys = np.array([m[0] for m in mine])
        index = np.array([m[1] for m in mine])
        rest = np.array([m[2] for m in mine])
        in_play = keys.copy()
        taken = []
        for _ in range(round_size):
            k = int(in_play.max())
            i = int(index[in_play == k].min())
            w = int(np.nonzero(index == i)[0][0])
            taken.append((k, i, int(rest[w])))
            in_play[w] = 0
        accepted = [taken[0]]
        rest_taken = taken[0][2]
        for k, i, r in taken[1:]:
            follows = (k > rest_taken and len(picks) + len(accepted) < npoint and i < n
                       and all(not (squared_distance(points[a], points[i]) < key_distance(k))
                               for _, a, _ in accepted))
            if not follows:
                break
            accepted.append((k, i, r))
            rest_taken = max(rest_taken, r)
        new = [i for _, i, _ in accepted]
        for w in range(WARPS):
            if mine[w][1] in new:
                hit = idx[w] == mine[w][1]
                dist[w][hit] = -1
                stale[w, np.nonzero(hit.any(1))[0][0]] = True
        picks += new
        centres = [points[i] for i in new]
    return picks, rounds, chunks_updated, warps_updated, slots


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(0)
    cells = np.arange(4096)
    clouds = [
        ("uniform", rng.random((8192, 3), dtype=F32), 1024, 7),
        ("gaussian", rng.standard_normal((8192, 3)).astype(F32), 1024, 0),
        ("uniform", rng.random((1024, 3), dtype=F32), 256, 0),
        ("grid 16^3 (all ties)", np.stack([cells % 16, cells // 16 % 16, cells // 256], 1)
         .astype(F32), 4096, 5),
        ("8 points repeated", np.tile(rng.random((8, 3), dtype=F32), (250, 1)), 2000, 0),
        ("8 clumps", (rng.random((3000, 3)) * 0.01 + (np.arange(3000) // 375)[:, None] * 3)
         .astype(F32), 3000, 0),
        ("33 points", rng.random((33, 3), dtype=F32), 33, 32),
        ("all at the origin", np.zeros((100, 3), F32), 100, 0),
    ]
    if quick:
        clouds = [c for c in clouds if len(c[1]) <= 3000]
    print("cloud,n,npoint,round,equal_to_sequential,picks_per_round,"
          "points_updated_per_pick,register_kernel_points_updated_per_pick")
    failures = 0
    for name, points, npoint, start in clouds:
        expected = sequential_fps(points, npoint, start)
        for round_size in (1, 2, 4):
            picks, rounds, chunks, warps, slots = striped_fps(points, npoint, start, round_size)
            equal = picks == expected
            failures += not equal
            per_pick = max(npoint - 1, 1)
            # The register kernel takes one pick per barrier: its column is for round 1.
            register = f"{warps * 32 * slots / per_pick:.0f}" if round_size == 1 else "-"
            print(f"{name},{len(points)},{npoint},{round_size},{'yes' if equal else 'NO'},"
                  f"{per_pick / max(rounds, 1):.2f},{chunks * 32 / per_pick:.0f},{register}",
                  flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
