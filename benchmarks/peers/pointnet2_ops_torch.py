"""PointNet++ point ops in pure PyTorch beside dtrain's kernels, same process.

The pure-PyTorch versions are what users write without a custom extension
(the widely copied "pointnet2_utils.py" style): an iterative FPS loop over
torch ops, ball query as pairwise distances + "first nsample indices inside"
via topk, kNN and three-NN as cdist + topk, and torch.gather for gathering,
grouping and interpolation. dtrain's ops are loaded with
torch.ops.load_library and called as torch.ops.dtrain.*. Both run on the
same inputs and thread pool.

Column `agreement`: the share of dtrain's output rows (index ops: one
query's neighbour list) or elements (feature ops) equal to the pure-PyTorch
result computed with exact distances. The timed PyTorch versions use
cdist's default, which above 25 points computes distances through a matrix
product (|a|^2 + |b|^2 - 2ab); its rounding moves points across the radius
and reorders near-ties, so timing and checking use different modes.

Setup per N, as bench_pointnet2_ops.cpp: B = 8 clouds uniform in the unit
cube, npoint = N / 4 centres, radius 0.2, nsample 32, k = 16, C = 32. Each
op's two versions run once (the check, also the warm-up), then --rounds
rounds of one call each, in alternating order, on the process's intra-op
threads.

Usage:
  python pointnet2_ops_torch.py --library build/kernels/libdtrain_kernels.so \
      [--sizes 1024,4096] [--rounds 5] [--torch-fps-max-n 16384] \
      [--device cpu] [--out rounds.csv]

CSV (benchmarks/report/rounds.py's plain format): case,impl,round,ms,agreement
(case "<op> B=8 N=<n>", impl dtrain or torch).
"""

import argparse
import csv
import sys
import time

import torch

B, C, RADIUS, NSAMPLE, K = 8, 32, 0.2, 32, 16


# ---- pure PyTorch -----------------------------------------------------------
def fps_torch(xyz, npoint, exact=False):
    """The FPS loop users write. exact: the squared distance as
    (dx*dx + dy*dy) + dz*dz, one rounded operation at a time, as dtrain
    documents it; the timed sum over the last dimension may add in another
    order on CUDA, and FPS magnifies one differently rounded near-tie."""
    b, n, _ = xyz.shape
    centroids = torch.zeros(b, npoint, dtype=torch.long, device=xyz.device)
    distance = torch.full((b, n), float("inf"), device=xyz.device)
    farthest = torch.zeros(b, dtype=torch.long, device=xyz.device)
    batch = torch.arange(b, device=xyz.device)
    for i in range(npoint):
        centroids[:, i] = farthest
        centroid = xyz[batch, farthest, :].view(b, 1, 3)
        if exact:
            d = xyz - centroid
            dist = (d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1]) + d[..., 2] * d[..., 2]
        else:
            dist = torch.sum((xyz - centroid) ** 2, -1)
        distance = torch.minimum(distance, dist)
        farthest = torch.max(distance, -1)[1]
    return centroids


def square_distance(src, dst, exact=False):
    """(M, 3), (N, 3) -> (M, N) squared distances: cdist as users call it, or
    exact (dx^2 + dy^2 + dz^2 in fp32, no matrix product) for the check."""
    if not exact:
        return torch.cdist(src, dst) ** 2
    return ((src.unsqueeze(1) - dst.unsqueeze(0)) ** 2).sum(-1)


def ball_query_torch(new_xyz, xyz, radius, nsample, exact=False):
    n = xyz.shape[1]
    out = []
    for b in range(new_xyz.shape[0]):  # one cloud at a time bounds memory
        d2 = square_distance(new_xyz[b], xyz[b], exact)
        # exact: radius^2 in float32, as documented for dtrain's ball query
        r2 = torch.tensor(radius, dtype=torch.float32) ** 2 if exact else radius * radius
        ar = torch.arange(n, device=xyz.device).expand_as(d2)
        key = torch.where(d2 < r2, ar, torch.full_like(ar, n))
        idx = torch.topk(key, nsample, dim=-1, largest=False, sorted=True)[0]
        first = idx[:, :1].expand_as(idx)
        idx = torch.where(idx == n, first, idx)
        out.append(torch.where(idx == n, torch.zeros_like(idx), idx))
    return torch.stack(out)


def knn_torch(new_xyz, xyz, k, exact=False):
    out = []
    for b in range(new_xyz.shape[0]):
        d2 = square_distance(new_xyz[b], xyz[b], exact)
        if exact:  # ties by lowest index, as dtrain's kernels: a stable sort
            out.append(torch.sort(d2, dim=-1, stable=True)[1][:, :k])
        else:
            out.append(torch.topk(d2, k, dim=-1, largest=False)[1])
    return torch.stack(out)


def gather_torch(features, idx):
    return torch.gather(features, 2, idx.unsqueeze(1).expand(-1, features.shape[1], -1))


def group_torch(features, idx):
    b, m, s = idx.shape
    return gather_torch(features, idx.reshape(b, m * s)).view(b, features.shape[1], m, s)


def three_interpolate_torch(features, idx, weight):
    b, n, _ = idx.shape
    picked = gather_torch(features, idx.reshape(b, n * 3)).view(b, features.shape[1], n, 3)
    return (picked * weight.unsqueeze(1)).sum(-1)


# ---- timing -----------------------------------------------------------------
def timed_ms(fn, device):
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3


def agreement(a, b):
    if a.dtype == torch.long:
        return (a == b).all(-1).double().mean().item()
    return torch.isclose(a, b).double().mean().item()


def run_size(n, device, rounds, torch_fps_max_n, rows):
    torch.manual_seed(0)
    xyz = torch.rand(B, n, 3, device=device)
    features = torch.randn(B, C, n, device=device)
    npoint = n // 4
    ops = torch.ops.dtrain
    centres = ops.furthest_point_sample(xyz, npoint)
    new_xyz = ops.gather_points(xyz.transpose(1, 2).contiguous(), centres).transpose(1, 2).contiguous()
    ball_idx, _ = ops.ball_query(new_xyz, xyz, RADIUS, NSAMPLE)
    dist3, idx3 = ops.three_nn(xyz, new_xyz)
    weight = 1.0 / (dist3 + 1e-8)
    weight = weight / weight.sum(-1, keepdim=True)
    coarse = torch.randn(B, C, npoint, device=device)

    # name, dtrain, timed pure PyTorch, the exact PyTorch result (None: the timed one)
    cases = [
        ("furthest_point_sample", lambda: ops.furthest_point_sample(xyz, npoint),
         (lambda: fps_torch(xyz, npoint)) if n <= torch_fps_max_n else None,
         lambda: fps_torch(xyz, npoint, exact=True)),
        ("gather_points", lambda: ops.gather_points(features, centres),
         lambda: gather_torch(features, centres), None),
        ("ball_query", lambda: ops.ball_query(new_xyz, xyz, RADIUS, NSAMPLE)[0],
         lambda: ball_query_torch(new_xyz, xyz, RADIUS, NSAMPLE),
         lambda: ball_query_torch(new_xyz, xyz, RADIUS, NSAMPLE, exact=True)),
        ("knn", lambda: ops.knn(new_xyz, xyz, K)[0], lambda: knn_torch(new_xyz, xyz, K),
         lambda: knn_torch(new_xyz, xyz, K, exact=True)),
        ("group_points", lambda: ops.group_points(features, ball_idx),
         lambda: group_torch(features, ball_idx), None),
        ("three_nn", lambda: ops.three_nn(xyz, new_xyz)[1], lambda: knn_torch(xyz, new_xyz, 3),
         lambda: knn_torch(xyz, new_xyz, 3, exact=True)),
        ("three_interpolate", lambda: ops.three_interpolate(coarse, idx3, weight),
         lambda: three_interpolate_torch(coarse, idx3, weight), None),
    ]
    for name, ours, theirs, exact in cases:
        case = f"{name} B={B} N={n}"
        if theirs is None:
            print(f"{case}: pure PyTorch skipped (see --torch-fps-max-n)")
            continue
        same = f"{agreement(ours(), (exact or theirs)()):.4f}"  # also the warm-up
        for round_ in range(rounds):
            # One call each per round, in alternating order.
            sides = [("dtrain", ours), ("torch", theirs)]
            for impl, fn in sides if round_ % 2 == 0 else sides[::-1]:
                rows.append({"case": case, "impl": impl, "round": round_,
                             "ms": f"{timed_ms(fn, device):.6g}", "agreement": same})
        print(f"{case}: {rounds} rounds, agreement {same}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--library", required=True, help="path to libdtrain_kernels.so")
    parser.add_argument("--sizes", default="1024,4096")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--torch-fps-max-n", type=int, default=16384,
                        help="skip the pure-PyTorch FPS loop above this N (it is the slowest)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--out", default="pointnet2_ops_vs_torch_rounds.csv")
    args = parser.parse_args()
    torch.ops.load_library(args.library)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {args.device}")
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        run_size(n, args.device, args.rounds, args.torch_fps_max_n, rows)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["case", "impl", "round", "ms", "agreement"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
