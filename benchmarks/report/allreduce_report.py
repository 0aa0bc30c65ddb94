"""Merges the all-reduce CSVs of dtrain and torch.distributed into one table
with a ratio column, and plots bus bandwidth per size when matplotlib is
importable.

  python allreduce_report.py --dtrain d.csv --torch t.csv \
      --out benchmarks/results/allreduce_gloo.csv [--png benchmarks/results/allreduce_gloo.png]

Output columns: backend,impl,world_size,bytes,time_us,algbw_gbps,busbw_gbps,
ratio_vs_torch, where ratio_vs_torch = dtrain time / torch time at that size
(on both rows of the size; below 1 means dtrain is faster).
"""

import argparse
import csv
import sys


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dtrain", required=True)
    p.add_argument("--torch", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--png", default="")
    args = p.parse_args()

    ours, theirs = read(args.dtrain), read(args.torch)
    torch_time = {int(r["bytes"]): float(r["time_us"]) for r in theirs}
    dtrain_time = {int(r["bytes"]): float(r["time_us"]) for r in ours}
    common = sorted(set(torch_time) & set(dtrain_time))
    if not common:
        sys.exit("allreduce_report.py: error: the two CSVs share no message size")
    columns = list(ours[0].keys()) + ["ratio_vs_torch"]
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for nbytes in common:
            ratio = dtrain_time[nbytes] / torch_time[nbytes]
            for rows in (ours, theirs):
                row = next(r for r in rows if int(r["bytes"]) == nbytes)
                w.writerow({**row, "ratio_vs_torch": f"{ratio:.3f}"})
    print(f"{'bytes':>10} {'dtrain_us':>11} {'torch_us':>11} {'ratio':>7}")
    for nbytes in common:
        print(f"{nbytes:>10} {dtrain_time[nbytes]:>11.1f} {torch_time[nbytes]:>11.1f} "
              f"{dtrain_time[nbytes] / torch_time[nbytes]:>7.3f}")
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
    fig, (bw, ratio) = plt.subplots(1, 2, figsize=(11, 4))
    for rows, label in ((ours, "dtrain"), (theirs, "torch.distributed")):
        rows = sorted(rows, key=lambda r: int(r["bytes"]))
        bw.plot([int(r["bytes"]) for r in rows], [float(r["busbw_gbps"]) for r in rows],
                marker="o", label=label)
    world = ours[0]["world_size"]
    bw.set(xscale="log", xlabel="message size (bytes)", ylabel="bus bandwidth (GB/s)",
           title=f"all_reduce SUM float32, gloo, {world} ranks, loopback")
    bw.legend()
    bw.grid(True, which="both", alpha=0.3)
    ratio.plot(common, [dtrain_time[b] / torch_time[b] for b in common], marker="o")
    ratio.axhline(1.0, color="grey", linestyle="--")
    ratio.set(xscale="log", xlabel="message size (bytes)",
              ylabel="dtrain time / torch time", title="ratio (below 1: dtrain faster)")
    ratio.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
