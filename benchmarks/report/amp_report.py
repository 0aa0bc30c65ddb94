"""Plots the toy CNN's training step with and without autocast, dtrain's
bench_amp_toycnn beside torch.autocast (benchmarks/peers/amp_toycnn_torch.py),
from the CSV benchmarks/run_amp.sh (or the GPU checks) merge: on the left
each configuration's median step time, one group of bars per batch size, one
bar per implementation and precision; on the right the speedup of each
reduced precision over the same implementation's float32 step (float32
step time / reduced-precision step time), with a line at 1x; third, each
configuration's peak memory: host RSS on the CPU, the allocator's peak on
CUDA. The printed table has the same numbers and dtrain's speedup over
torch.

  python amp_report.py --csv benchmarks/results/amp_toycnn_cpu.csv \\
      --png benchmarks/results/amp_toycnn_cpu.png

Input columns: impl,device,precision,batch_size,threads,steps,step_ms_median,
samples_per_s,peak_rss_mb,train_rss_growth_mb,peak_device_mb (one device).
"""

import argparse
import csv

PRECISIONS = ["off", "bf16", "fp16"]  # "off" is float32
IMPLS = ["dtrain", "torch"]


def read_steps(path):
    """({(impl, precision, batch): row}, device); every row of one device."""
    rows = {}
    devices = set()
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["impl"], row["precision"], int(row["batch_size"]))
            if key in rows:
                raise SystemExit(f"{path}: {key} appears twice")
            if row["precision"] not in PRECISIONS or row["impl"] not in IMPLS:
                raise SystemExit(f"{path}: unknown implementation or precision in {key}")
            rows[key] = row
            devices.add(row["device"])
    if not rows:
        raise SystemExit(f"{path}: no rows")
    if len(devices) != 1:
        raise SystemExit(f"{path}: rows of several devices {sorted(devices)}; plot one at a time")
    return rows, devices.pop()


def step_ms(rows, impl, precision, batch):
    row = rows.get((impl, precision, batch))
    return float(row["step_ms_median"]) if row else None


def ratio(numerator, denominator):
    return numerator / denominator if numerator and denominator else None


def table(rows, device, batches, precisions):
    """Lines: per batch and precision, both step times, dtrain's speedup over
    torch, each implementation's speedup over its float32 step, and memory."""
    memory = "peak_device_mb" if device == "cuda" else "peak_rss_mb"
    lines = [f"{'batch':>5} {'precision':>9} {'dtrain ms':>10} {'torch ms':>9} "
             f"{'dtrain/torch':>12} {'dtrain vs fp32':>14} {'torch vs fp32':>13} "
             f"{'dtrain ' + memory:>20} {'torch ' + memory:>19}"]
    for batch in batches:
        for precision in precisions:
            mine = step_ms(rows, "dtrain", precision, batch)
            theirs = step_ms(rows, "torch", precision, batch)
            cells = [ratio(theirs, mine),
                     ratio(step_ms(rows, "dtrain", "off", batch), mine),
                     ratio(step_ms(rows, "torch", "off", batch), theirs)]
            mems = [rows.get((impl, precision, batch), {}).get(memory, "") for impl in IMPLS]
            mems = [f"{float(m):.0f}" if m else "" for m in mems]
            text = [f"{c:.2f}x" if c else "-" for c in cells]
            lines.append(f"{batch:>5} {precision:>9} {mine or float('nan'):>10.2f} "
                         f"{theirs or float('nan'):>9.2f} {text[0]:>12} {text[1]:>14} "
                         f"{text[2]:>13} {mems[0] or '-':>20} {mems[1] or '-':>19}")
    return lines


def plot(rows, device, batches, precisions, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = [(impl, p) for p in precisions for impl in IMPLS]
    colors = {"dtrain": "tab:blue", "torch": "tab:orange"}
    hatches = {"off": "", "bf16": "//", "fp16": ".."}
    fig, (left, right, memory) = plt.subplots(1, 3, figsize=(15, 4.2))
    width = 0.8 / len(series)
    for i, (impl, precision) in enumerate(series):
        xs = [b + (i - (len(series) - 1) / 2) * width for b in range(len(batches))]
        ys = [step_ms(rows, impl, precision, batch) or 0 for batch in batches]
        left.bar(xs, ys, width, color=colors[impl], hatch=hatches[precision], edgecolor="black",
                 linewidth=0.5, label=f"{impl} {'fp32' if precision == 'off' else precision}")
    left.set_xticks(range(len(batches)))
    left.set_xticklabels([str(b) for b in batches])
    left.set_xlabel("batch size")
    left.set_ylabel("median step time (ms, log)")
    left.set_yscale("log")
    left.set_title(f"toy CNN training step on {device}")
    left.legend(fontsize=8)

    reduced = [p for p in precisions if p != "off"]
    pairs = [(impl, p) for p in reduced for impl in IMPLS]
    width = 0.8 / max(1, len(pairs))
    for i, (impl, precision) in enumerate(pairs):
        xs = [b + (i - (len(pairs) - 1) / 2) * width for b in range(len(batches))]
        ys = [ratio(step_ms(rows, impl, "off", batch), step_ms(rows, impl, precision, batch)) or 0
              for batch in batches]
        right.bar(xs, ys, width, color=colors[impl], hatch=hatches[precision], edgecolor="black",
                  linewidth=0.5, label=f"{impl} {precision}")
    right.axhline(1.0, color="black", linewidth=0.8)
    right.set_xticks(range(len(batches)))
    right.set_xticklabels([str(b) for b in batches])
    right.set_xlabel("batch size")
    right.set_ylabel("fp32 step time / autocast step time")
    right.set_title("speedup of autocast over the same implementation's fp32")
    if pairs:
        right.legend(fontsize=8)

    column = "peak_device_mb" if device == "cuda" else "peak_rss_mb"
    width = 0.8 / len(series)
    for i, (impl, precision) in enumerate(series):
        xs = [b + (i - (len(series) - 1) / 2) * width for b in range(len(batches))]
        ys = [float(rows[(impl, precision, batch)][column] or 0)
              if (impl, precision, batch) in rows else 0 for batch in batches]
        memory.bar(xs, ys, width, color=colors[impl], hatch=hatches[precision], edgecolor="black",
                   linewidth=0.5)
    memory.set_xticks(range(len(batches)))
    memory.set_xticklabels([str(b) for b in batches])
    memory.set_xlabel("batch size")
    memory.set_ylabel("peak GPU memory (MiB)" if device == "cuda" else "peak host RSS (MiB)")
    memory.set_title("memory (same bars as on the left)")
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--csv", required=True)
    p.add_argument("--png", default="", help="write the plot here (needs matplotlib)")
    args = p.parse_args()
    rows, device = read_steps(args.csv)
    batches = sorted({batch for (_, _, batch) in rows})
    precisions = [p for p in PRECISIONS if any(key[1] == p for key in rows)]
    print("\n".join(table(rows, device, batches, precisions)))
    if args.png:
        plot(rows, device, batches, precisions, args.png)
        print(f"plot: {args.png}")


if __name__ == "__main__":
    main()
