"""Merges all-reduce CSVs of bench_allreduce and its peers into one table:
the median time per (impl, size) over every CSV given (one per round of an
interleaved run), dtrain's ratio to the baseline impl, and a plot of bus
bandwidth per size when matplotlib is importable.

  python allreduce_report.py --baseline torch --out benchmarks/results/allreduce_gloo.csv \\
      [--png benchmarks/results/allreduce_gloo.png] [--load "load average 1.9"] round*.csv

Input columns: backend,impl,world_size,bytes,time_us,algbw_gbps,busbw_gbps.
Output columns: the same, time_us the median over rounds (algbw and busbw
recomputed from it), plus rounds, time_us_min, time_us_max and
ratio_vs_<baseline> = dtrain time / baseline time at that size (on every row
of the size; below 1 means dtrain is faster).
"""

import argparse
import collections
import csv
import statistics
import sys


def read(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            rows.extend(csv.DictReader(f))
    return rows


def merge(rows):
    """{(impl, bytes): row with the median time over rounds}."""
    groups = collections.defaultdict(list)
    for row in rows:
        groups[(row["impl"], int(row["bytes"]))].append(row)
    merged = {}
    for (impl, nbytes), group in groups.items():
        times = [float(r["time_us"]) for r in group]
        world = int(group[0]["world_size"])
        time_us = statistics.median(times)
        algbw = nbytes / (time_us * 1e-6) / 1e9
        merged[(impl, nbytes)] = {
            "backend": group[0]["backend"], "impl": impl, "world_size": world, "bytes": nbytes,
            "time_us": f"{time_us:.6g}", "algbw_gbps": f"{algbw:.6g}",
            "busbw_gbps": f"{algbw * 2.0 * (world - 1) / world:.6g}", "rounds": len(times),
            "time_us_min": f"{min(times):.6g}", "time_us_max": f"{max(times):.6g}"}
    return merged


def main():
    p = argparse.ArgumentParser()
    p.add_argument("csvs", nargs="+", help="bench_allreduce / peer CSVs, one or more rounds")
    p.add_argument("--baseline", required=True, help="the impl dtrain is compared with")
    p.add_argument("--out", required=True)
    p.add_argument("--png", default="")
    p.add_argument("--load", default="", help="machine load during the run, for the plot title")
    args = p.parse_args()

    merged = merge(read(args.csvs))
    ours = {b: r for (impl, b), r in merged.items() if impl == "dtrain"}
    theirs = {b: r for (impl, b), r in merged.items() if impl == args.baseline}
    common = sorted(set(ours) & set(theirs))
    if not common:
        sys.exit(f"allreduce_report.py: error: no message size has both dtrain and "
                 f"{args.baseline} rows")
    ratio_column = f"ratio_vs_{args.baseline}"
    ratio = {b: float(ours[b]["time_us"]) / float(theirs[b]["time_us"]) for b in common}
    columns = list(next(iter(merged.values())).keys()) + [ratio_column]
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for nbytes in common:
            for row in (ours[nbytes], theirs[nbytes]):
                # Significant digits, not 3 decimals: on a loaded machine raw
                # MPI has taken 125x dtrain's time (0.008), close to a 0.000.
                w.writerow({**row, ratio_column: f"{ratio[nbytes]:.4g}"})
    rounds = ours[common[0]]["rounds"]
    print(f"median of {rounds} round(s); ratio = dtrain time / {args.baseline} time")
    print(f"{'bytes':>10} {'dtrain_us':>11} {args.baseline + '_us':>11} {'ratio':>7}  "
          f"{'dtrain min..max':>21}  {args.baseline + ' min..max':>21}")
    for b in common:
        print(f"{b:>10} {float(ours[b]['time_us']):>11.1f} {float(theirs[b]['time_us']):>11.1f} "
              f"{ratio[b]:>7.3f}  {ours[b]['time_us_min']:>10}..{ours[b]['time_us_max']:<10}  "
              f"{theirs[b]['time_us_min']:>10}..{theirs[b]['time_us_max']:<10}")
    print(f"wrote {args.out}")

    if not args.png:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not importable; no plot", file=sys.stderr)
        return
    fig, (bw, rt) = plt.subplots(1, 2, figsize=(11, 4))
    backend = ours[common[0]]["backend"]
    world = ours[common[0]]["world_size"]
    peer = {"torch": "torch.distributed", "mpi": "raw MPI_Allreduce"}.get(args.baseline,
                                                                          args.baseline)
    for rows, label in ((ours, f"dtrain ({backend})"), (theirs, peer)):
        sizes = sorted(rows)
        bw.plot(sizes, [float(rows[b]["busbw_gbps"]) for b in sizes], marker="o", label=label)
    title = f"all_reduce SUM float32, {backend}, {world} ranks"
    bw.set(xscale="log", xlabel="message size (bytes)", ylabel="bus bandwidth (GB/s)",
           title=title + (f"\n{args.load}" if args.load else ""))
    bw.legend()
    bw.grid(True, which="both", alpha=0.3)
    rt.plot(common, [ratio[b] for b in common], marker="o")
    rt.axhline(1.0, color="grey", linestyle="--")
    rt.set(xscale="log", xlabel="message size (bytes)", ylabel=f"dtrain time / {args.baseline} time",
           title=f"median of {rounds} rounds (below 1: dtrain faster)")
    rt.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
