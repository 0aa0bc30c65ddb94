"""Plots dtrain's PointNet++ point ops against the pure-PyTorch versions, from
the CSV of benchmarks/peers/pointnet2_ops_torch.py: one group of bars per op,
one bar per cloud size N, the height the speedup (PyTorch time / dtrain
time, log scale), with lines at 1x (parity) and at 10x (the CPU goal for
FPS and ball query). Rows whose agreement is below 1 are marked with the
share that agreed, so a fast wrong answer cannot pass for a fast one.

  python pointnet2_report.py --csv benchmarks/results/pointnet2_ops_vs_torch_cpu.csv \\
      --png benchmarks/results/pointnet2_ops_vs_torch_cpu.png [--title "..."]

Input columns: op,device,B,N,impl,median_ms,speedup_vs_torch,agreement.
"""

import argparse
import csv
import sys


def speedups(path):
    """{op: {N: (speedup, agreement)}} over dtrain's rows, ops in file order."""
    table = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["impl"] != "dtrain":
                continue
            if not row["speedup_vs_torch"]:
                raise SystemExit(f"{path}: dtrain row {row['op']} N={row['N']} has no speedup_vs_torch")
            table.setdefault(row["op"], {})[int(row["N"])] = (
                float(row["speedup_vs_torch"]),
                float(row["agreement"]),
            )
    if not table:
        raise SystemExit(f"{path}: no dtrain rows")
    return table


def device_and_batch(path):
    with open(path, newline="") as f:
        first = next(csv.DictReader(f))
    return first["device"], first["B"]


def plot(table, title, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = list(table)
    sizes = sorted({n for by_size in table.values() for n in by_size})
    width = 0.8 / len(sizes)
    fig, ax = plt.subplots(figsize=(1.3 * len(ops) + 2, 4.5))
    for i, n in enumerate(sizes):
        xs, heights, marks = [], [], []
        for j, op in enumerate(ops):
            if n in table[op]:
                speedup, agreement = table[op][n]
                xs.append(j + (i - (len(sizes) - 1) / 2) * width)
                heights.append(speedup)
                marks.append(agreement)
        bars = ax.bar(xs, heights, width, label=f"N = {n}")
        for bar, speedup, agreement in zip(bars, heights, marks):
            label = f"{speedup:.3g}x" if agreement >= 1.0 else f"{speedup:.3g}x\n({agreement:.4f} agree)"
            ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=6, rotation=90, xytext=(0, 2),
                        textcoords="offset points")
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(10.0, color="grey", linewidth=0.8, linestyle="--", label="10x")
    ax.set_xticks(range(len(ops)))
    ax.set_xticklabels([op.replace("_", "\n", 1) for op in ops], fontsize=8)
    ax.set_ylabel("speedup over pure PyTorch (log)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    ax.margins(y=0.25)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", required=True, help="output of pointnet2_ops_torch.py")
    parser.add_argument("--png", required=True, help="where to write the plot")
    parser.add_argument("--title", default="", help="plot title (default: device and B)")
    args = parser.parse_args()
    table = speedups(args.csv)
    device, batch = device_and_batch(args.csv)
    title = args.title or f"dtrain PointNet++ ops against pure PyTorch, {device}, B = {batch}"
    plot(table, title, args.png)
    print(f"wrote {args.png}", file=sys.stderr)


if __name__ == "__main__":
    main()
