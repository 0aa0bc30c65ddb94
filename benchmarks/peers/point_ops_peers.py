"""dtrain's CPU point ops beside the strongest CPU implementations a Python
user can install, in one process, one call each per round:

  furthest point sampling   fpsample (C++): vanilla FPS, and the bucket
                            QuickFPS (bucket_fps_kdline_sampling) at the
                            height its README recommends, 3-5 for small
                            clouds and 7 for medium ones (h=5 up to 8192
                            points, 7 above); both single-threaded
  kNN, ball query, three-NN SciPy's cKDTree: the tree is built in every call
                            (a new cloud every step), then query(); ball
                            query is query(k=nsample, distance_upper_bound=r),
                            a fixed-size answer as PointNet++ needs
                            (query_ball_point's lists were slower here)

dtrain runs as torch.ops.dtrain.* on one thread (impl dtrain_1thread, beside
the one-thread peers) and on every core (dtrain_all_threads, beside
fpsample's one thread and cKDTree's workers=-1). A batch of clouds is one
call for dtrain and a loop over the clouds for the peers, as a user writes
it.

Clouds are uniform in the unit cube; M = min(N / 4, 4096) centres (FPS
samples M; kNN and ball query ask from M centres picked by FPS; three-NN
asks from all N points into the M centres); k = 16; nsample 32 with a
radius that keeps the expected ball at 34 points whatever N
(0.2 * (1024 / N)^(1/3)).

Each case first runs every implementation once, untimed, and checks it:
column agreement, on the peers' rows, is the share of the peer's answer
that matches dtrain's (FPS: equal picks, position by position; fpsample's
bucket variant reads start_idx in its own point order, so its samples start
elsewhere and are compared with dtrain started at that point; kNN and
three-NN: equal distances per query; ball query: per centre, the same
number of neighbours, every one within the radius). Then --rounds rounds
(fewer from --big-n on, where vanilla FPS takes seconds) of one call each,
the order rotating.

  python point_ops_peers.py --library build/kernels/libdtrain_kernels.so [--quick]
      [--rounds 7] [--out rounds.csv]

CSV (benchmarks/report/rounds.py's plain format): case,impl,round,ms,agreement,note
"""

import argparse
import csv
import os
import sys
import time

import numpy as np
import torch

try:
    import fpsample
    from scipy.spatial import cKDTree
except ImportError as error:  # the runner installs them; say which is missing
    sys.exit(f"point_ops_peers.py: {error}; pip install fpsample scipy "
             "(benchmarks/run_point_ops_peers.sh does)")

CLOUDS = [(1, 1024), (1, 4096), (1, 16384), (1, 65536), (1, 131072), (16, 1024), (8, 8192)]
QUICK_CLOUDS = [(1, 1024), (2, 512)]
K, NSAMPLE = 16, 32


def centres_for(n):
    return min(n // 4, 4096)


def radius_for(n):
    return 0.2 * (1024 / n) ** (1 / 3)


def bucket_height(n):
    return 5 if n <= 8192 else 7


def fps_cases(ops, x, a, m, cores):
    h = bucket_height(a.shape[1])
    return {
        "dtrain_1thread": (1, lambda: ops.furthest_point_sample(x, m)),
        "dtrain_all_threads": (cores, lambda: ops.furthest_point_sample(x, m)),
        "fpsample_vanilla": (1, lambda: [fpsample.fps_sampling(c, m, start_idx=0) for c in a]),
        "fpsample_bucket": (1, lambda: [fpsample.bucket_fps_kdline_sampling(c, m, h, start_idx=0)
                                        for c in a]),
    }, {"fpsample_bucket": f"h={h}"}


def fps_agreement(ops, x, ours, impl, theirs):
    picks = []
    for b, sample in enumerate(theirs):
        sample = np.asarray(sample, dtype=np.int64)
        if impl == "fpsample_bucket":  # dtrain from the point the bucket variant started at
            mine = ops.furthest_point_sample(x[b:b + 1], len(sample), int(sample[0]))[0].numpy()
        else:
            mine = ours[b].numpy()
        picks.append(np.mean(mine == sample))
    return float(np.mean(picks))


def tree_cases(op, ops, x, c, a, ca, radius, cores):
    """dtrain and cKDTree on one and on every core, for knn, ball_query or three_nn."""
    if op == "knn":
        ours = lambda: ops.knn(c, x, K)
        theirs = lambda w: [cKDTree(p).query(q, K, workers=w) for p, q in zip(a, ca)]
    elif op == "ball_query":
        ours = lambda: ops.ball_query(c, x, radius, NSAMPLE)
        theirs = lambda w: [cKDTree(p).query(q, NSAMPLE, distance_upper_bound=radius, workers=w)
                            for p, q in zip(a, ca)]
    else:  # three_nn: every point into the centres
        ours = lambda: ops.three_nn(x, c)
        theirs = lambda w: [cKDTree(q).query(p, 3, workers=w) for p, q in zip(a, ca)]
    return {"dtrain_1thread": (1, ours), "dtrain_all_threads": (cores, ours),
            "ckdtree_1worker": (1, lambda: theirs(1)),
            "ckdtree_all_workers": (cores, lambda: theirs(-1))}, {}


def tree_agreement(op, ours, theirs, radius):
    shares = []
    for b, (dist, idx) in enumerate(theirs):
        if op == "ball_query":
            inside = np.isfinite(dist)
            found = np.minimum(ours[1][b].numpy(), NSAMPLE)  # (idx, count)
            within = np.all(dist[inside] < radius * (1 + 1e-5))
            shares.append(float(np.mean(inside.sum(-1) == found)) if within else 0.0)
        else:  # knn / three_nn: cKDTree returns distances, dtrain squared ones
            mine = ours[0][b] if op == "three_nn" else ours[1][b]  # (dist2, idx) / (idx, dist2)
            mine = np.sqrt(mine.numpy().astype(np.float64))
            shares.append(float(np.mean(np.all(np.isclose(mine, dist, rtol=1e-4, atol=1e-6),
                                               axis=-1))))
    return float(np.mean(shares))


def run_case(op, batch, n, rounds, cores, ops, rows):
    generator = torch.Generator().manual_seed(n + batch)
    x = torch.rand(batch, n, 3, generator=generator)
    a = np.ascontiguousarray(x.numpy())
    m = centres_for(n)
    radius = radius_for(n)
    torch.set_num_threads(cores)
    fps = ops.furthest_point_sample(x, m)
    c = torch.gather(x, 1, fps.unsqueeze(-1).expand(-1, -1, 3)).contiguous()
    ca = np.ascontiguousarray(c.numpy())
    if op == "furthest_point_sample":
        impls, notes = fps_cases(ops, x, a, m, cores)
        case = f"{op} B={batch} N={n} M={m}"
    else:
        impls, notes = tree_cases(op, ops, x, c, a, ca, radius, cores)
        case = f"{op} B={batch} N={n} M={m}" + (f" r={radius:.3g}" if op == "ball_query" else "")
    answers, agreement = {}, {}
    for impl, (threads, call) in impls.items():  # the check, also the warm-up
        torch.set_num_threads(threads)
        answers[impl] = call()
    for impl in impls:
        if impl.startswith("dtrain"):
            continue
        if op == "furthest_point_sample":
            agreement[impl] = fps_agreement(ops, x, answers["dtrain_1thread"], impl, answers[impl])
        else:
            agreement[impl] = tree_agreement(op, answers["dtrain_1thread"], answers[impl], radius)
    names = list(impls)
    for round_ in range(rounds):
        shift = round_ % len(names)
        for impl in names[shift:] + names[:shift]:
            threads, call = impls[impl]
            torch.set_num_threads(threads)
            start = time.perf_counter()
            call()
            ms = (time.perf_counter() - start) * 1e3
            rows.append({"case": case, "impl": impl, "round": round_, "ms": f"{ms:.6g}",
                         "agreement": f"{agreement[impl]:.4f}" if impl in agreement else "",
                         "note": notes.get(impl, "")})
    torch.set_num_threads(cores)
    shown = ", ".join(f"{k} {v:.4f}" for k, v in agreement.items())
    print(f"{case}: {rounds} rounds; agreement with dtrain: {shown}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", required=True, help="path to libdtrain_kernels.so")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--big-n", type=int, default=65536,
                        help="clouds of this many points and more get --big-rounds rounds")
    parser.add_argument("--big-rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="two small clouds, one round")
    parser.add_argument("--out", default="point_ops_peers_rounds.csv")
    args = parser.parse_args()
    torch.ops.load_library(args.library)
    ops = torch.ops.dtrain
    cores = os.cpu_count() or 1
    print(f"torch {torch.__version__}, fpsample {fpsample.__version__}, "
          f"scipy {sys.modules['scipy'].__version__}, {cores} cores", flush=True)
    clouds = QUICK_CLOUDS if args.quick else CLOUDS
    rows = []
    for op in ("furthest_point_sample", "knn", "ball_query", "three_nn"):
        for batch, n in clouds:
            rounds = 1 if args.quick else args.big_rounds if n >= args.big_n else args.rounds
            run_case(op, batch, n, rounds, cores, ops, rows)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["case", "impl", "round", "ms", "agreement", "note"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
