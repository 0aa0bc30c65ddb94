"""Medians of repeated DDP benchmark rows (bench_ddp and ddp_torch.py), with
the ratios the DDP issue asks for.

  python ddp_report.py --raw raw.csv --out benchmarks/results/ddp_cpu.csv [--png ddp_cpu.png]

One output row per (model, batch_per_rank, mode, world): step time and
samples/s of dtrain and of torch (medians over repeats), and
  speedup_vs_torch  = dtrain samples/s / torch samples/s (above 1: dtrain faster)
  dtrain_overhead_pct = dtrain DDP step / dtrain local step - 1, in percent
  torch_overhead_pct  = the same for torch
  hidden_pct        = dtrain's communication hidden behind backward
"""

import argparse
import csv
import statistics
from collections import defaultdict


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--raw", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--png", default="")
    args = p.parse_args()

    runs = defaultdict(list)
    with open(args.raw, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["impl"], row["model"], int(row["batch_per_rank"]), row["mode"],
                   int(row["world"]))
            runs[key].append(row)

    def median(impl, model, batch, mode, world, field):
        rows = runs.get((impl, model, batch, mode, world), [])
        values = [float(r[field]) for r in rows if r[field] != ""]
        return statistics.median(values) if values else float("nan")

    keys = sorted({k[1:] for k in runs if k[3] == "ddp"})
    out_rows = []
    for model, batch, mode, world in keys:
        d_ms = median("dtrain", model, batch, mode, world, "step_ms_median")
        t_ms = median("torch", model, batch, mode, world, "step_ms_median")
        d_local = median("dtrain", model, batch, "local", 1, "step_ms_median")
        t_local = median("torch", model, batch, "local", 1, "step_ms_median")
        d_sps = median("dtrain", model, batch, mode, world, "samples_per_s")
        t_sps = median("torch", model, batch, mode, world, "samples_per_s")
        out_rows.append({
            "model": model, "batch_per_rank": batch, "world": world,
            "repeats": len(runs.get(("dtrain", model, batch, mode, world), [])),
            "dtrain_step_ms": f"{d_ms:.3f}", "torch_step_ms": f"{t_ms:.3f}",
            "dtrain_samples_per_s": f"{d_sps:.1f}", "torch_samples_per_s": f"{t_sps:.1f}",
            "speedup_vs_torch": f"{d_sps / t_sps:.3f}",
            "dtrain_local_step_ms": f"{d_local:.3f}", "torch_local_step_ms": f"{t_local:.3f}",
            "dtrain_overhead_pct": f"{100 * (d_ms / d_local - 1):.1f}",
            "torch_overhead_pct": f"{100 * (t_ms / t_local - 1):.1f}",
            "hidden_pct": f"{median('dtrain', model, batch, mode, world, 'hidden_pct'):.1f}",
        })
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(out_rows[0].keys()))
        writer.writeheader()
        writer.writerows(out_rows)
    for row in out_rows:
        print(f"{row['model']:9s} batch {row['batch_per_rank']:4d} world {row['world']}: "
              f"dtrain {row['dtrain_step_ms']} ms, torch {row['torch_step_ms']} ms, "
              f"speedup {row['speedup_vs_torch']}x, overhead dtrain {row['dtrain_overhead_pct']}% "
              f"torch {row['torch_overhead_pct']}%, hidden {row['hidden_pct']}%")

    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        labels = [f"{r['model']}\nb{r['batch_per_rank']} w{r['world']}" for r in out_rows]
        speedups = [float(r["speedup_vs_torch"]) for r in out_rows]
        fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(labels)), 4))
        ax.bar(range(len(labels)), speedups, color="tab:blue")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(1.3, color="tab:green", linestyle="--", linewidth=0.8, label="goal 1.3x")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("dtrain / PyTorch DDP samples/s")
        ax.set_title("DDP on CPU (Gloo, 1 thread per rank)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.png, dpi=120)


if __name__ == "__main__":
    main()
