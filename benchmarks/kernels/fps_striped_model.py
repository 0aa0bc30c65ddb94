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


class StripedBlock:
    """One block of the kernel: the points first..first+count-1 of the cloud, striped over 16
    warps in the Morton order of that subset, with each warp's chunk boxes and candidate."""

    def __init__(self, points, first, count, start):
        self.points = points
        self.first = first
        subset = points[first:first + count]
        slots = 1
        while slots * THREADS < count:
            slots *= 2
        order = morton_order(subset, slots)
        # Point (warp w, slot s, lane l) sits at sorted position s * 512 + 32 w + l.
        local = np.array([[order[s * THREADS + 32 * w: s * THREADS + 32 * w + 32]
                           for s in range(slots)] for w in range(WARPS)])
        real = local < count
        self.idx = np.where(real, first + local, len(points))  # indices into the whole cloud
        self.xyz = np.where(real[..., None], subset[np.minimum(local, count - 1)], 0).astype(F32)
        self.dist = np.where(real, np.where(self.idx == start, F32(-1), F32(np.inf)),
                             F32(-2)).astype(F32)
        self.low = np.where(real[..., None], self.xyz, np.inf).min(2).astype(F32)
        self.high = np.where(real[..., None], self.xyz, -np.inf).max(2).astype(F32)
        self.chunk_key = np.zeros((WARPS, slots), np.int64)
        self.chunk_largest = np.full((WARPS, slots), np.inf, F32)
        self.stale = np.ones((WARPS, slots), bool)
        self.mine = [(0, NO_INDEX, 0)] * WARPS  # each warp's (key, index, rest)
        self.slots = slots
        # The register kernel's warps (blocked, 32 * slots consecutive positions each), for
        # the comparison column.
        self.blocked = first + order.reshape(WARPS, -1)
        self.blocked[order.reshape(WARPS, -1) >= count] = -1

    def update(self, centres):
        """Updates the chunks near a centre (or stale) and those warps' candidates; returns
        the number of chunks updated."""
        updated = 0
        for w in range(WARPS):
            near = self.stale[w].copy()
            for c in centres:
                near |= ~(box_distance(c, self.low[w], self.high[w]) >= self.chunk_largest[w])
            if not near.any():
                continue
            for s in np.nonzero(near)[0]:
                for c in centres:
                    d = squared_distance(c, self.xyz[w, s])
                    self.dist[w, s] = np.where(d < self.dist[w, s], d, self.dist[w, s])
                self.chunk_key[w, s] = distance_key(self.dist[w, s]).max()
            updated += int(near.sum())
            self.chunk_largest[w] = key_distance(self.chunk_key[w])
            key = int(self.chunk_key[w].max())
            candidate = NO_INDEX
            for s in np.nonzero(self.chunk_key[w] == key)[0]:
                holds = distance_key(self.dist[w, s]) == key
                if holds.any():
                    candidate = min(candidate, int(self.idx[w, s][holds].min()))
            lane_keys = np.sort(distance_key(self.dist[w]), axis=0)
            best = lane_keys[-1]
            second = lane_keys[-2] if self.slots > 1 else np.zeros(32, np.int64)
            reaches = best == key
            rest = key if reaches.sum() > 1 else int(np.where(reaches, second, best).max())
            self.mine[w] = (key, candidate, rest)
            self.stale[w] = False
        return updated

    def entry(self):
        """The block's candidate and rest, from its warps' (the unit of a cluster's round)."""
        keys = [m[0] for m in self.mine]
        key = max(keys)
        index = min(m[1] for m in self.mine if m[0] == key)
        rest = max(m[2] if m[1] == index else m[0] for m in self.mine)
        return key, index, rest

    def mark(self, picked):
        for w in range(WARPS):
            if self.mine[w][1] in picked:
                hit = self.idx[w] == self.mine[w][1]
                self.dist[w][hit] = -1
                self.stale[w, np.nonzero(hit.any(1))[0][0]] = True


def take_round(units, points, picked, npoint, round_size):
    """The longest exact prefix of the units' candidates in order (Note [FPS in rounds of
    independent picks]); units are (key, index, rest)."""
    keys = np.array([u[0] for u in units])
    index = np.array([u[1] for u in units])
    rest = np.array([u[2] for u in units])
    in_play = keys.copy()
    taken = []
    for _ in range(round_size):
        k = int(in_play.max())
        i = int(index[in_play == k].min())
        unit = int(np.nonzero(index == i)[0][0])
        taken.append((k, i, int(rest[unit])))
        in_play[unit] = 0
    accepted = [taken[0]]
    rest_taken = taken[0][2]
    for k, i, r in taken[1:]:
        follows = (k > rest_taken and picked + len(accepted) < npoint and i < len(points)
                   and all(not (squared_distance(points[a], points[i]) < key_distance(k))
                           for _, a, _ in accepted))
        if not follows:
            break
        accepted.append((k, i, r))
        rest_taken = max(rest_taken, r)
    return [i for _, i, _ in accepted]


def striped_fps(points, npoint, start, round_size, cluster=1):
    """The kernel's picks with `cluster` blocks per cloud, its rounds, the chunks it updated,
    and the warps the register kernel's layout would update for the same centres."""
    n = len(points)
    share = -(-n // cluster)
    blocks = [StripedBlock(points, r * share, min(share, n - r * share), start)
              for r in range(cluster) if r * share < n]
    warp_boxes = []
    for block in blocks:
        for b in block.blocked:
            b = b[b >= 0]
            warp_boxes.append((b, points[b].min(0) if len(b) else np.full(3, np.inf, F32),
                               points[b].max(0) if len(b) else np.full(3, -np.inf, F32)))
    centres, picks, rounds, chunks_updated, warps_updated = [points[start]], [start], 0, 0, 0
    running = np.full(n, np.inf, F32)
    running[start] = -1
    while len(picks) < npoint:
        rounds += 1
        # The register kernel on the same centres: whole warps near a centre.
        for b, low, high in warp_boxes:
            largest = running[b].max() if len(b) else F32(-2)
            if any(not (box_distance(c, low, high) >= largest) for c in centres):
                warps_updated += 1
        for c in centres:
            running = np.minimum(running, squared_distance(c, points))
        running[picks] = -1
        chunks_updated += sum(block.update(centres) for block in blocks)
        # One block: its warps are the units of the round; a cluster: its blocks.
        units = blocks[0].mine if len(blocks) == 1 else [block.entry() for block in blocks]
        new = take_round(units, points, len(picks), npoint, round_size)
        for block in blocks:
            block.mark(new)
        picks += new
        centres = [points[i] for i in new]
    return picks, rounds, chunks_updated, warps_updated, blocks[0].slots


def replay_one_block(settings, header, run, label=str):
    """Replays a one-block model on one_block_clouds (the small ones with --quick) for each
    setting: prints `cloud,n,npoint,` + header, then a row per cloud and setting, whose
    columns are label(setting), whether the picks equal sequential FPS and what
    run(points, npoint, start, setting) returns beside its picks. Returns the exit status:
    1 when any picks differ."""
    clouds = one_block_clouds(np.random.default_rng(0))
    if "--quick" in sys.argv:
        clouds = [c for c in clouds if len(c[1]) <= 4096 and c[2] <= 1024]
    print("cloud,n,npoint," + header)
    failures = 0
    for name, points, npoint, start in clouds:
        expected = sequential_fps(points, npoint, start)
        for setting in settings:
            picks, columns = run(points, npoint, start, setting)
            equal = picks == expected
            failures += not equal
            print(",".join([name, str(len(points)), str(npoint), label(setting),
                            "yes" if equal else "NO", *columns]), flush=True)
    return 1 if failures else 0


def one_block_clouds(rng):
    """(name, points, npoint, start) of the clouds the one-block models replay: uniform and
    Gaussian at the CUDA goal's size, smaller uniform clouds, and the adversarial ones (a grid
    of ties, repeats, clumps, a cloud of mostly padding, all points at the origin)."""
    cells = np.arange(4096)
    return [
        ("uniform", rng.random((8192, 3), dtype=F32), 1024, 7),
        ("gaussian", rng.standard_normal((8192, 3)).astype(F32), 1024, 0),
        ("uniform", rng.random((4096, 3), dtype=F32), 1024, 0),
        ("uniform", rng.random((1024, 3), dtype=F32), 256, 0),
        ("grid 16^3 (all ties)", np.stack([cells % 16, cells // 16 % 16, cells // 256], 1)
         .astype(F32), 1024, 5),
        ("8 points repeated", np.tile(rng.random((8, 3), dtype=F32), (250, 1)), 2000, 0),
        ("8 clumps", (rng.random((3000, 3)) * 0.01 + (np.arange(3000) // 375)[:, None] * 3)
         .astype(F32), 3000, 0),
        ("33 points", rng.random((33, 3), dtype=F32), 33, 32),
        ("all at the origin", np.zeros((100, 3), F32), 100, 0),
    ]


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(0)
    cells = np.arange(4096)
    clouds = [  # name, points, npoint, start, blocks per cloud
        ("uniform", rng.random((8192, 3), dtype=F32), 1024, 7, 1),
        ("gaussian", rng.standard_normal((8192, 3)).astype(F32), 1024, 0, 1),
        ("uniform", rng.random((1024, 3), dtype=F32), 256, 0, 1),
        ("grid 16^3 (all ties)", np.stack([cells % 16, cells // 16 % 16, cells // 256], 1)
         .astype(F32), 4096, 5, 1),
        ("8 points repeated", np.tile(rng.random((8, 3), dtype=F32), (250, 1)), 2000, 0, 1),
        ("8 clumps", (rng.random((3000, 3)) * 0.01 + (np.arange(3000) // 375)[:, None] * 3)
         .astype(F32), 3000, 0, 1),
        ("33 points", rng.random((33, 3), dtype=F32), 33, 32, 1),
        ("all at the origin", np.zeros((100, 3), F32), 100, 0, 1),
        ("uniform", rng.random((32768, 3), dtype=F32), 2048, 3, 4),
        ("grid 16^3 (all ties)", np.stack([cells % 16, cells // 16 % 16, cells // 256], 1)
         .astype(F32), 1024, 5, 2),
        ("8 clumps", (rng.random((3000, 3)) * 0.01 + (np.arange(3000) // 375)[:, None] * 3)
         .astype(F32), 3000, 2999, 3),
    ]
    if quick:
        clouds = [c for c in clouds if len(c[1]) <= 4096 and c[2] <= 1024]
    print("cloud,n,blocks_per_cloud,npoint,round,equal_to_sequential,picks_per_round,"
          "points_updated_per_pick,register_kernel_points_updated_per_pick")
    failures = 0
    for name, points, npoint, start, cluster in clouds:
        expected = sequential_fps(points, npoint, start)
        for round_size in (1, 2, 4):
            picks, rounds, chunks, warps, slots = striped_fps(points, npoint, start, round_size,
                                                              cluster)
            equal = picks == expected
            failures += not equal
            per_pick = max(npoint - 1, 1)
            # The register kernel takes one pick per barrier: its column is for round 1.
            register = f"{warps * 32 * slots / per_pick:.0f}" if round_size == 1 else "-"
            print(f"{name},{len(points)},{cluster},{npoint},{round_size},"
                  f"{'yes' if equal else 'NO'},"
                  f"{per_pick / max(rounds, 1):.2f},{chunks * 32 / per_pick:.0f},{register}",
                  flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
