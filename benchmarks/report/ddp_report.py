"""Per-round ratios of the lockstep DDP benchmark (bench_ddp and ddp_torch.py),
as the DDP issue asks for them.

  python ddp_report.py --raw raw-*.csv --out benchmarks/results/ddp_cpu.csv [--png ddp_cpu.png]

Each raw row is one block of steps (one round of one participant). Blocks of
the same round ran within seconds of each other (Note [Lockstep benchmarks]
in benchmarks/support/lockstep.h), so every ratio is taken within a round
and the report gives the median over rounds, with the quartiles:
  speedup_vs_torch    = torch step time / dtrain step time in the same round,
                        same world (a samples/s ratio; above 1: dtrain faster)
  speedup_of_medians  = torch_step_ms / dtrain_step_ms, the ratio of the two
                        medians in the other columns; it differs from the
                        median of per-round ratios when rounds are noisy
                        (slow rounds pair up there, not here)
  dtrain_overhead_pct = dtrain DDP step / dtrain local step - 1, in percent,
                        local at the same world size (that many independent
                        local trainings at once: the same load on the machine)
  torch_overhead_pct  = the same for torch
  hidden_pct          = dtrain's communication hidden behind backward
Step times and samples/s are medians of the block medians. --rounds-out
keeps the raw blocks of every file in one CSV, from which this report can be
made again (--raw that file).
"""

import argparse
import csv
import statistics
from collections import defaultdict


def quartiles(values):
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--raw", required=True, nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--png", default="")
    p.add_argument("--rounds-out", default="", help="write every raw block here (one CSV)")
    args = p.parse_args()

    # (impl, model, batch, mode, world) -> {round: block median ms}
    blocks = defaultdict(dict)
    hidden = defaultdict(list)
    raw_rows = []
    for path in args.raw:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                raw_rows.append(row)
                key = (row["impl"], row["model"], int(row["batch_per_rank"]), row["mode"],
                       int(row["world"]))
                blocks[key][int(row["round"])] = float(row["step_ms_median"])
                if row["hidden_pct"]:
                    hidden[key].append(float(row["hidden_pct"]))

    def per_round(numerator, denominator):
        a, b = blocks.get(numerator, {}), blocks.get(denominator, {})
        return [a[r] / b[r] for r in sorted(a.keys() & b.keys())]

    out_rows = []
    for model, batch, world in sorted({(k[1], k[2], k[4]) for k in blocks if k[3] == "ddp"}):
        d = ("dtrain", model, batch, "ddp", world)
        t = ("torch", model, batch, "ddp", world)
        d_local = ("dtrain", model, batch, "local", world)
        t_local = ("torch", model, batch, "local", world)
        speedups = per_round(t, d)
        if not speedups:
            continue
        low, speedup, high = quartiles(speedups)
        d_ms = statistics.median(blocks[d].values())
        t_ms = statistics.median(blocks[t].values())
        d_over = per_round(d, d_local)
        t_over = per_round(t, t_local)
        out_rows.append({
            "model": model, "batch_per_rank": batch, "world": world, "rounds": len(speedups),
            "dtrain_step_ms": f"{d_ms:.3f}", "torch_step_ms": f"{t_ms:.3f}",
            "dtrain_samples_per_s": f"{1000 * batch * world / d_ms:.1f}",
            "torch_samples_per_s": f"{1000 * batch * world / t_ms:.1f}",
            "speedup_vs_torch": f"{speedup:.3f}",
            "speedup_q1": f"{low:.3f}", "speedup_q3": f"{high:.3f}",
            "speedup_of_medians": f"{t_ms / d_ms:.3f}",
            "dtrain_local_step_ms": f"{statistics.median(blocks[d_local].values()):.3f}",
            "torch_local_step_ms": f"{statistics.median(blocks[t_local].values()):.3f}",
            "dtrain_overhead_pct": f"{100 * (statistics.median(d_over) - 1):.1f}",
            "torch_overhead_pct": f"{100 * (statistics.median(t_over) - 1):.1f}",
            "hidden_pct": f"{statistics.median(hidden[d]):.1f}" if hidden[d] else "",
        })
    if not out_rows:
        raise SystemExit("ddp_report: no DDP rows with matching dtrain and torch rounds")
    if args.rounds_out:
        with open(args.rounds_out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(raw_rows[0].keys()))
            writer.writeheader()
            writer.writerows(raw_rows)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(out_rows[0].keys()))
        writer.writeheader()
        writer.writerows(out_rows)
    for row in out_rows:
        print(f"{row['model']:9s} batch {row['batch_per_rank']:4d} world {row['world']}: "
              f"dtrain {row['dtrain_step_ms']} ms, torch {row['torch_step_ms']} ms, "
              f"speedup {row['speedup_vs_torch']}x ({row['speedup_q1']}-{row['speedup_q3']}), "
              f"overhead dtrain {row['dtrain_overhead_pct']}% torch {row['torch_overhead_pct']}%, "
              f"hidden {row['hidden_pct']}%")

    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        labels = [f"{r['model']}\nb{r['batch_per_rank']} w{r['world']}" for r in out_rows]
        speedups = [float(r["speedup_vs_torch"]) for r in out_rows]
        errors = [[s - float(r["speedup_q1"]) for s, r in zip(speedups, out_rows)],
                  [float(r["speedup_q3"]) - s for s, r in zip(speedups, out_rows)]]
        fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(labels)), 4))
        ax.bar(range(len(labels)), speedups, yerr=errors, capsize=3, color="tab:blue")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(1.3, color="tab:green", linestyle="--", linewidth=0.8, label="goal 1.3x")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("dtrain / PyTorch DDP samples/s\n(median of rounds, quartiles)")
        ax.set_title("DDP on CPU (Gloo, 1 thread per rank, lockstep rounds)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.png, dpi=120)


if __name__ == "__main__":
    main()
