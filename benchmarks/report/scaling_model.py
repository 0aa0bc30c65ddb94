"""A model of DDP weak scaling: a step is its compute plus the part of its
gradient all-reduce that backward does not hide. Checked against dtrain's
DDP on 1-3 CPU ranks here, then used to predict clusters this project cannot
rent.

  python scaling_model.py --rounds scaling_cpu_rounds.csv --allreduce allreduce_gloo_rounds.csv
      [--allreduce-mpi allreduce_mpi_rounds.csv] [--gpu-summary gpu_summary.txt]
      [--gpu-step gpu_pointnet2_step.csv] --out scaling_model.csv --fit-out allreduce_fit.csv
      [--png scaling_model.png]

Note [DDP scaling model]
~~~~~~~~~~~~~~~~~~~~~~~~
Gradients (parameters x 4 bytes) are all-reduced in DDP's buckets: the first
of 1 MiB but at most half of the gradient, the rest of up to 25 MiB
(DdpOptions' defaults and DdpEngine's rule), cut here by bytes rather than
whole tensors. A bucket of n bytes on p ranks
costs T(n, p):
  - here (Gloo over loopback), a ring: 2(p-1) alpha + 2(p-1)/p n beta, with
    alpha and beta fitted (least squares on relative error) to the median
    times of dtrain's 2-rank all-reduce over 4 KiB-64 MiB in this run
    (allreduce_fit.csv; the MPI backend's fit is listed beside it);
  - on a GPU cluster, the faster of NCCL's ring and tree as NCCL's own
    tuner prices them (NVIDIA/nccl src/graph/tuning.cc, commit 01afd20,
    Simple protocol: ring latency 8.4 us + 3.4 us per NVLink step + 9.6 us
    per network step, x1.9 across nodes for large messages; tree latency
    2 ((GPUs per node - 1) 28 us + log2(nodes) 50 us), its bus bandwidth
    0.9 x the link's, at most 80 GB/s beyond 2 nodes, halved), over 8 H100
    SXM GPUs per node on NVLink 4 (900 GB/s per GPU both ways, 450 GB/s one
    way: NVIDIA H100 Tensor Core GPU datasheet) and, between nodes, one
    InfiniBand NDR 400 Gb/s port per GPU (50 GB/s: NVIDIA DGX H100
    datasheet, 8 single-port ConnectX-7).
Without overlap a step is compute + sum(T). With overlap, buckets go out
while backward runs: compute + max(T(last bucket), sum(T) - backward), as
the last bucket (the first layers' gradients) is ready only when backward
ends. Hiding needs a processor that the compute leaves free: on a GPU,
NCCL's own SMs and copy engines; on CPU ranks, a core for each rank's
communication thread (ranks x (threads + 1) <= cores). Where there is none,
the all-reduce takes its turn on the compute's core and nothing is hidden.
Weak-scaling efficiency is the 1-rank step over the p-rank step.

The check here predicts dtrain's DDP step at 1, 2 and 3 CPU ranks from
three measured parts and the fit above:
  - the compute: the mean step of p ranks that each train their own model
    and meet at a barrier after every step ("sync"): what the scheduler
    gives ranks that wait for each other, without gradient traffic. On 2
    cores, 3 such ranks take about twice a step, not 3/2, when a step is
    as short as a scheduler slice (the toy CNN's): two ranks run, then the
    third alone; independent trainings ("local", also measured) hide this;
  - backward: the local steps' backward;
  - the engine's own cost (hooks, bucket copies), the 1-rank DDP step less
    the 1-rank local step (a world of 1 all-reduces nothing), so the 1-rank
    check is the calibration and 2 and 3 ranks the test.
Step times are the slowest rank's mean over a block of steps, not a median:
a synchronous step waits for any rank the scheduler took off its core,
which only the mean of the slowest shows. Each round's prediction is set
against the DDP step of the same round, and the error is the median of the
per-round ratios of prediction to measurement. What the model leaves out:
the all-reduce's own waits for a peer that is off its core (dedicated GPUs
and cores have none), and stragglers. On GPUs the compute is a measured
GPU step (gpu_pointnet2_step.csv, with the commit line of gpu_summary.txt;
"not run" without one) with the backward share of the CPU step, and the
engine's cost is left in the GPU step; and for every model the shortest
GPU step that still scales at 90% efficiency ("break-even"), which needs
no GPU measurement.
"""

import argparse
import math
import os
import re
import statistics
import sys
from collections import defaultdict

import stats

MIB = 1 << 20
FIRST_BUCKET, BUCKET = 1 * MIB, 25 * MIB
GPUS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
GPUS_PER_NODE = 8
NVLINK_GBPS, NET_GBPS = 450.0, 50.0
RING_BASE_US, RING_NVLINK_US, RING_NET_US = 8.4, 3.4, 9.6
TREE_NVLINK_US, TREE_NET_US = 28.0, 50.0
GOAL = 0.9
CLUSTER = "8 H100 SXM per node on NVLink 4 (450 GB/s), InfiniBand NDR 400 Gb/s per GPU"
COLUMNS = stats.PROVENANCE + [
    "kind", "model", "ranks", "interconnect", "overlap", "gradient_mb", "compute_source",
    "compute_ms", "backward_ms", "allreduce_ms", "exposed_ms", "step_ms", "efficiency",
    "engine_ms", "measured_ms", "measured_q1_ms", "measured_q3_ms", "error_pct"]
FIT_COLUMNS = stats.PROVENANCE + ["backend", "ranks", "sizes", "alpha_us", "beta_us_per_mib",
                                  "bus_gbps", "max_error_pct"]


def buckets(nbytes):
    # DdpEngine's rule: the first bucket holds at most half of the gradient,
    # so a model under 2 MiB still gets two all-reduces.
    first = min(FIRST_BUCKET, max(1, nbytes // 2))
    rest = nbytes - first
    sizes = [first] + [BUCKET] * (rest // BUCKET) + ([rest % BUCKET] if rest % BUCKET else [])
    return [s for s in sizes if s > 0]


def exposed(times, backward_ms, overlap):
    if not times:
        return 0.0
    return max(times[-1], sum(times) - backward_ms) if overlap else sum(times)


# ---- the all-reduce fit ----------------------------------------------------------
def fit(path, impl):
    """(alpha_us, beta_us_per_byte, sizes, max relative error) of a ring on 2
    ranks, from the median time per size of impl in a rounds CSV."""
    times = defaultdict(list)
    for row in stats.read_csv(path):
        if row["impl"] == impl:
            times[int(row["bytes"])].append(float(row["ms"]) * 1000)
    points = sorted((n, statistics.median(t)) for n, t in times.items())
    if len(points) < 2:
        return None
    # minimise sum(((a + b n) / T - 1)^2): linear in a and b
    s11 = sum(1 / t**2 for _, t in points)
    s12 = sum(n / t**2 for n, t in points)
    s22 = sum(n * n / t**2 for n, t in points)
    r1 = sum(1 / t for _, t in points)
    r2 = sum(n / t for n, t in points)
    det = s11 * s22 - s12 * s12
    a, b = (r1 * s22 - r2 * s12) / det, (s11 * r2 - s12 * r1) / det
    if a < 0:
        a, b = 0.0, r2 / s22
    error = max(abs((a + b * n) / t - 1) for n, t in points)
    return a / 2, b, len(points), error  # 2 ranks: 2(p-1) = 2 latencies, 2(p-1)/p = 1


def ring_here(alpha_us, beta, p):
    return lambda n: 0.0 if p == 1 else (2 * (p - 1) * alpha_us + 2 * (p - 1) / p * n * beta) / 1000


# ---- NCCL's cost on the cluster ----------------------------------------------------
def nccl_ms(nbytes, p):
    if p == 1:
        return 0.0
    nodes = math.ceil(p / GPUS_PER_NODE)
    per_node = min(p, GPUS_PER_NODE)
    bus = NVLINK_GBPS if nodes == 1 else NET_GBPS
    steps, inter = 2 * (p - 1), 2 * (nodes - 1)
    ring_lat = RING_BASE_US + (steps - inter) * RING_NVLINK_US + inter * RING_NET_US
    if nodes > 1 and nbytes >= p / 16 * 65536:
        ring_lat *= 1.9  # the tuner's "plateau effect of ring"
    ring = ring_lat + nbytes / (1000 * bus * p / steps)
    tree_bus = min(0.9 * bus, 80.0 if nodes > 2 else 110.0) * 0.5
    tree_lat = 2 * ((per_node - 1) * TREE_NVLINK_US + math.log2(nodes) * TREE_NET_US)
    tree = tree_lat + nbytes / (1000 * tree_bus)
    return min(ring, tree) / 1000


def break_even(times, backward_share, overlap):
    """The shortest compute (ms) with efficiency >= GOAL (Note [DDP scaling model])."""
    if not times:
        return 0.0
    k = GOAL / (1 - GOAL)
    if not overlap:
        return k * sum(times)
    return max(k * times[-1], k * sum(times) / (1 + k * backward_share))


# ---- inputs ------------------------------------------------------------------------
CASE = re.compile(r"^(\S+) b(\d+) w(\d+)$")


def read_measurements(path):
    """{model: {world: {impl: {round: row}}}} of the scaling rounds."""
    out = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for row in stats.read_csv(path):
        found = CASE.match(row["case"])
        if not found:
            sys.exit(f"scaling_model.py: {path}: unexpected case '{row['case']}'")
        out[found.group(1)][int(found.group(3))][row["impl"]][row["round"]] = row
    return out


def gpu_steps(summary_path, step_path):
    """{model: (ms, source)} of fp32 GPU steps with the GPU run's commit, or {}."""
    commit = None
    if summary_path and os.path.exists(summary_path):
        found = re.search(r"^commit: ([0-9a-f]{40})", open(summary_path).read(), re.M)
        commit = found.group(1) if found else None
    if not commit or not step_path or not os.path.exists(step_path):
        return {}
    steps = {}
    for row in stats.read_csv(step_path):
        impl = row.get("impl", "")
        if impl.startswith("dtrain_cpp") and "cuda" in impl and not impl.endswith(("bf16", "fp16")):
            source = (f"GPU step at commit {commit[:12]} ({row['batch_size']} x {row['points']} "
                      "points)")
            steps[f"pointnet2-{row['preset']}"] = (float(row["step_ms_median"]), source)
    return steps


def median_of(rows, column):
    values = [float(r[column]) for r in rows if r.get(column, "") != ""]
    return statistics.median(values) if values else 0.0


# ---- the model ---------------------------------------------------------------------
def round_ms(blocks, column="mean_ms"):
    """{round: the column's value} of one participant's blocks."""
    return {r: float(row[column]) for r, row in blocks.items()}


def engine_ms(worlds):
    """The DDP engine's own cost per step: the median over rounds of the
    1-rank DDP step less the 1-rank local step, of the same round (a
    negative difference is noise: 0)."""
    one = worlds.get(1, {})
    ddp, local = round_ms(one.get("dtrain-ddp", {})), round_ms(one.get("dtrain-local", {}))
    shared = ddp.keys() & local.keys()
    return max(0.0, statistics.median(ddp[r] - local[r] for r in shared)) if shared else 0.0


def check_rows(measured, alpha_us, beta, cores):
    """The model against dtrain's DDP step at each rank count, round by round:
    a round's blocks ran seconds apart (Note [Lockstep benchmarks]), so each
    round's prediction is set against its own DDP block, and the error is the
    median of the per-round ratios (Note [DDP scaling model])."""
    rows = []
    for model, worlds in measured.items():
        engine = engine_ms(worlds)
        for p, impls in sorted(worlds.items()):
            local = impls["dtrain-local"]
            if p > 1 and not impls["dtrain-sync"]:
                sys.exit(f"scaling_model.py: no synchronous blocks (dtrain-sync) of {model} at "
                         f"{p} ranks; rerun benchmarks/run_scaling.sh")
            compute = round_ms(impls["dtrain-sync"] if p > 1 else local)
            backward, ddp = round_ms(local, "backward_ms"), round_ms(impls["dtrain-ddp"])
            shared = sorted(compute.keys() & backward.keys() & ddp.keys())
            if not shared:
                continue
            gradient = 4 * int(local[shared[0]]["parameters"])
            times = [ring_here(alpha_us, beta, p)(n) for n in buckets(gradient)]
            q1, med, q3 = stats.quartiles([ddp[r] for r in shared])
            spare_core = p * 2 <= cores  # one compute thread per rank, and its communication
            for overlap in (False, True):
                hides = overlap and spare_core
                predicted = [compute[r] + engine + exposed(times, backward[r], hides)
                             for r in shared]
                mid_compute = statistics.median(compute[r] for r in shared)
                mid_backward = statistics.median(backward[r] for r in shared)
                source = "local" if p == 1 else "synchronous (a barrier per step)"
                rows.append({
                    "kind": "check", "model": model, "ranks": p,
                    "interconnect": f"Gloo over loopback (fitted), {cores} cores",
                    "overlap": "yes" if overlap else "no", "gradient_mb": gradient / MIB,
                    "compute_source": f"{source} steps at {p} rank(s), measured"
                    + ("" if hides or not overlap else "; no core left to hide communication"),
                    "compute_ms": mid_compute, "backward_ms": mid_backward,
                    "allreduce_ms": sum(times),
                    "exposed_ms": exposed(times, mid_backward, hides), "engine_ms": engine,
                    "step_ms": statistics.median(predicted), "efficiency": "",
                    "measured_ms": med, "measured_q1_ms": q1, "measured_q3_ms": q3,
                    "error_pct": 100 * (statistics.median(
                        x / ddp[r] for x, r in zip(predicted, shared)) - 1)})
    return rows


def cluster_rows(measured, gpu):
    rows = []
    for model, worlds in measured.items():
        one = worlds.get(1, {})
        local = list(one.get("dtrain-local", {}).values())
        if not local:
            continue
        gradient = 4 * int(local[0]["parameters"])
        share = median_of(local, "backward_ms") / median_of(local, "mean_ms")
        for p in GPUS:
            times = [nccl_ms(n, p) for n in buckets(gradient)]
            for overlap in (False, True):
                base = {"kind": "cluster", "model": model, "ranks": p, "interconnect": CLUSTER,
                        "overlap": "yes" if overlap else "no", "gradient_mb": gradient / MIB,
                        "allreduce_ms": sum(times), "engine_ms": "", "measured_ms": "",
                        "measured_q1_ms": "", "measured_q3_ms": "", "error_pct": ""}
                if p > 1:  # one GPU communicates nothing: any step scales
                    compute = break_even(times, share, overlap)
                    hidden = exposed(times, share * compute, overlap)
                    rows.append({**base, "compute_source": f"break-even for {GOAL:.0%} efficiency",
                                 "compute_ms": compute, "backward_ms": share * compute,
                                 "exposed_ms": hidden, "step_ms": compute + hidden,
                                 "efficiency": GOAL})
                if model in gpu:
                    compute, source = gpu[model]
                    hidden = exposed(times, share * compute, overlap)
                    rows.append({**base, "compute_source": source, "compute_ms": compute,
                                 "backward_ms": share * compute, "exposed_ms": hidden,
                                 "step_ms": compute + hidden,
                                 "efficiency": compute / (compute + hidden)})
    return rows


def plot(rows, png, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not importable by {sys.executable}; no plot {png}", file=sys.stderr)
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    checks = [r for r in rows if r["kind"] == "check" and r["overlap"] == "yes"]
    models = list(dict.fromkeys(r["model"] for r in checks))
    for i, model in enumerate(models):
        mine = [r for r in checks if r["model"] == model]
        x = [r["ranks"] + 0.08 * (i - 1) for r in mine]
        measured = [r["measured_ms"] for r in mine]
        errors = [[m - r["measured_q1_ms"] for m, r in zip(measured, mine)],
                  [r["measured_q3_ms"] - m for m, r in zip(measured, mine)]]
        left.errorbar(x, measured, yerr=errors, fmt="o", capsize=3, color=f"C{i}",
                      label=f"{model} measured")
        left.plot(x, [r["step_ms"] for r in mine], "x--", color=f"C{i}", label=f"{model} model")
    left.set(yscale="log", xlabel="CPU ranks on this machine", ylabel="DDP step (ms)",
             title="check: measured (median, quartiles) and predicted", xticks=[1, 2, 3])
    left.legend(fontsize=7)
    cluster = [r for r in rows if r["kind"] == "cluster" and r["ranks"] > 1]
    for i, model in enumerate(models):
        for overlap, style in (("no", "--"), ("yes", "-")):
            mine = [r for r in cluster if r["model"] == model and r["overlap"] == overlap
                    and r["compute_source"].startswith("break-even")]
            right.plot([r["ranks"] for r in mine], [r["compute_ms"] for r in mine], style,
                       color=f"C{i}", marker="o", markersize=3,
                       label=f"{model}, overlap {overlap}")
    right.set(xscale="log", yscale="log", xlabel="GPUs (8 per node)",
              ylabel=f"shortest GPU step for {GOAL:.0%} efficiency (ms)",
              title="predicted: NVLink 4 in a node, InfiniBand NDR between nodes")
    right.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    print(f"wrote {png}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", required=True, help="run_scaling.sh's rounds CSV")
    parser.add_argument("--allreduce", required=True, help="run_allreduce.sh's rounds CSV")
    parser.add_argument("--allreduce-mpi", default="", help="run_allreduce_mpi.sh's rounds CSV")
    parser.add_argument("--gpu-summary", default="")
    parser.add_argument("--gpu-step", default="")
    parser.add_argument("--out", required=True)
    parser.add_argument("--fit-out", required=True)
    parser.add_argument("--png", default="")
    args = parser.parse_args()
    measured = read_measurements(args.rounds)
    gloo = fit(args.allreduce, "dtrain")
    if gloo is None:
        sys.exit(f"scaling_model.py: {args.allreduce} has too few dtrain sizes to fit")
    fit_origin = stats.read_csv(args.allreduce)[0]["commit"]
    head = stats.provenance(
        f"compute: local steps measured here ({args.rounds.rsplit('/', 1)[-1]}); all-reduce: "
        f"Gloo fit of dtrain's 2-rank all-reduce at commit {fit_origin[:12]}; cluster: {CLUSTER}, "
        "NCCL's tuner constants (Note [DDP scaling model] in benchmarks/report/scaling_model.py); "
        "buckets: the first of 1 MiB or half the gradient, then 25 MiB")
    fits = []
    for backend, path in (("gloo", args.allreduce), ("mpi", args.allreduce_mpi)):
        found = fit(path, "dtrain") if path and os.path.exists(path) else None
        if found:
            alpha, beta, sizes, error = found
            fits.append({**head, "backend": backend, "ranks": 2, "sizes": sizes,
                         "alpha_us": alpha, "beta_us_per_mib": beta * MIB,
                         "bus_gbps": 1e-3 / beta if beta > 0 else "", "max_error_pct": 100 * error})
    cores = stats.machine_cores(stats.read_csv(args.rounds)[0]["machine"])
    rows = check_rows(measured, gloo[0], gloo[1], cores)
    rows += cluster_rows(measured, gpu_steps(args.gpu_summary, args.gpu_step))
    rows = [{**head, **r} for r in rows]
    stats.write_csv(args.out, COLUMNS, rows)
    stats.write_csv(args.fit_out, FIT_COLUMNS, fits)
    for f in fits:
        print(f"fit {f['backend']}: alpha {f['alpha_us']:.1f} us per step, "
              f"{f['bus_gbps']:.2f} GB/s, worst size off by {f['max_error_pct']:.0f}%")
    for r in rows:
        if r["kind"] == "check":
            print(f"check {r['model']} {r['ranks']} rank(s), overlap {r['overlap']}: predicted "
                  f"{r['step_ms']:.1f} ms, measured {r['measured_ms']:.1f} ms "
                  f"({r['measured_q1_ms']:.1f}-{r['measured_q3_ms']:.1f}), {r['error_pct']:+.1f}%")
    print(f"wrote {args.out} and {args.fit_out}")
    if args.png:
        plot(rows, args.png, f"DDP scaling model, {head['machine']}, commit {head['commit'][:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
