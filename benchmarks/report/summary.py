"""benchmarks/results/SUMMARY.md, made from the results CSVs alone (and the
GPU checks' gpu_summary.txt), and the README's performance table, which is
this summary's headline table.

  python summary.py [--results benchmarks/results]                 # writes SUMMARY.md
  python summary.py --readme README.md                             # and the README's table
  python summary.py --check README.md                              # exit 1 if either differs

The README holds the table between the lines <!-- benchmarks:begin --> and
<!-- benchmarks:end -->. Ratios, verdicts and ranges: Note [Benchmark
verdicts] in benchmarks/report/stats.py. A figure whose CSV or row is
missing reads "not run"; nothing here is typed in by hand.
"""

import argparse
import difflib
import os
import sys

import gpu_section
import stats

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
BEGIN, END = "<!-- benchmarks:begin -->", "<!-- benchmarks:end -->"

# (what, CSV, case, dtrain's impl, peer's impl): the headline comparisons.
HEADLINE = [
    ("DDP step, toy CNN, 2 ranks (Gloo)", "ddp_cpu", "toycnn b8 w2", "dtrain-ddp", "torch-ddp"),
    ("DDP step, toy CNN, 2 ranks (Gloo)", "ddp_cpu", "toycnn b32 w2", "dtrain-ddp", "torch-ddp"),
    ("DDP step, toy CNN, 2 ranks (Gloo)", "ddp_cpu", "toycnn b128 w2", "dtrain-ddp", "torch-ddp"),
    ("DDP step, PointNet++-sized MLP, 2 ranks", "ddp_cpu", "pointmlp b8 w2", "dtrain-ddp",
     "torch-ddp"),
    ("PointNet++ training step", "pointnet2_train_cpu", "ssg-lite 16x512", "dtrain_cpp",
     "torch_python_dtrain_channels_last"),
    ("PointNet++ training step", "pointnet2_train_cpu", "ssg 8x1024", "dtrain_cpp",
     "torch_python_dtrain_channels_last"),
    ("PointNet++ training step", "pointnet2_train_cpu", "ssg 8x1024", "dtrain_cpp", "torch_python"),
    ("PointNet++ training step, bf16 autocast", "pointnet2_train_bf16_cpu", "ssg 8x1024",
     "dtrain_cpp_bf16", "torch_python_dtrain_channels_last_bf16"),
    ("toy CNN step, bf16 autocast", "amp_toycnn_cpu", "batch 256", "dtrain bf16", "torch bf16"),
    ("toy CNN step, bf16 autocast", "amp_toycnn_cpu", "batch 1024", "dtrain bf16", "torch bf16"),
    ("all-reduce, Gloo, 2 ranks", "allreduce_gloo", "4 KiB", "dtrain", "torch"),
    ("all-reduce, Gloo, 2 ranks", "allreduce_gloo", "256 KiB", "dtrain", "torch"),
    ("all-reduce, Gloo, 2 ranks", "allreduce_gloo", "4 MiB", "dtrain", "torch"),
    ("all-reduce, Gloo, 2 ranks", "allreduce_gloo", "64 MiB", "dtrain", "torch"),
    ("all-reduce, MPI, 2 ranks", "allreduce_mpi", "4 KiB", "dtrain", "mpi"),
    ("all-reduce, MPI, 2 ranks", "allreduce_mpi", "256 KiB", "dtrain", "mpi"),
    ("all-reduce, MPI, 2 ranks", "allreduce_mpi", "64 MiB", "dtrain", "mpi"),
    ("FPS", "point_ops_peers_cpu", "furthest_point_sample B=1 N=4096 M=1024", "dtrain_1thread",
     "fpsample_bucket"),
    ("FPS", "point_ops_peers_cpu", "furthest_point_sample B=1 N=131072 M=4096", "dtrain_1thread",
     "fpsample_bucket"),
    ("FPS", "point_ops_peers_cpu", "furthest_point_sample B=1 N=131072 M=4096", "dtrain_1thread",
     "fpsample_vanilla"),
    ("FPS", "point_ops_peers_cpu", "furthest_point_sample B=8 N=8192 M=2048",
     "dtrain_all_threads", "fpsample_bucket"),
    ("kNN, k=16", "point_ops_peers_cpu", "knn B=1 N=4096 M=1024", "dtrain_1thread",
     "ckdtree_1worker"),
    ("kNN, k=16", "point_ops_peers_cpu", "knn B=1 N=131072 M=4096", "dtrain_1thread",
     "ckdtree_1worker"),
    ("kNN, k=16", "point_ops_peers_cpu", "knn B=8 N=8192 M=2048", "dtrain_all_threads",
     "ckdtree_all_workers"),
    ("ball query, nsample 32", "point_ops_peers_cpu", "ball_query B=1 N=4096 M=1024 r=0.126",
     "dtrain_1thread", "ckdtree_1worker"),
    ("ball query, nsample 32", "point_ops_peers_cpu", "ball_query B=1 N=131072 M=4096 r=0.0397",
     "dtrain_1thread", "ckdtree_1worker"),
    ("ball query, nsample 32", "point_ops_peers_cpu", "ball_query B=8 N=8192 M=2048 r=0.1",
     "dtrain_all_threads", "ckdtree_all_workers"),
    ("three-NN", "point_ops_peers_cpu", "three_nn B=1 N=131072 M=4096", "dtrain_1thread",
     "ckdtree_1worker"),
    ("three-NN", "point_ops_peers_cpu", "three_nn B=8 N=8192 M=2048", "dtrain_all_threads",
     "ckdtree_all_workers"),
    ("batch norm + ReLU, forward and backward", "batch_norm_relu_cpu", "(8,64,512,32) float32",
     "dtrain_fused", "libtorch_batch_norm_relu"),
    ("batch norm + ReLU, forward and backward", "batch_norm_relu_cpu", "(8,64,512,32) bfloat16",
     "dtrain_fused", "libtorch_batch_norm_relu"),
    ("checkpoint wait, ssg with Adam", "checkpoint_cpu", "ssg", "dtrain background",
     "torch blocking"),
]

# (what, CSV, case, impl, column, unit, scale): dtrain's own figures.
ABSOLUTE = [
    ("all-reduce of 4 KiB, Gloo, 2 ranks", "allreduce_gloo", "4 KiB", "dtrain", "ms", "us", 1000),
    ("all-reduce of 64 MiB, Gloo, 2 ranks: bus bandwidth", "allreduce_gloo", "64 MiB", "dtrain",
     "busbw_gbps", "GB/s", 1),
    ("all-reduce of 4 KiB, MPI, 2 ranks", "allreduce_mpi", "4 KiB", "dtrain", "ms", "us", 1000),
    ("DDP step, toy CNN, batch 32 per rank, 2 ranks", "ddp_cpu", "toycnn b32 w2", "dtrain-ddp",
     "ms", "ms", 1),
    ("DDP step, PointNet++-sized MLP, batch 8 per rank, 2 ranks", "ddp_cpu", "pointmlp b8 w2",
     "dtrain-ddp", "ms", "ms", 1),
    ("PointNet++ ssg-lite training step, 16 x 512 points", "pointnet2_train_cpu",
     "ssg-lite 16x512", "dtrain_cpp", "ms", "ms", 1),
    ("PointNet++ ssg training step, 8 x 1024 points", "pointnet2_train_cpu", "ssg 8x1024",
     "dtrain_cpp", "ms", "ms", 1),
    ("FPS of 131072 points -> 4096, one thread", "point_ops_peers_cpu",
     "furthest_point_sample B=1 N=131072 M=4096", "dtrain_1thread", "ms", "ms", 1),
    ("kNN (k=16) of 4096 centres in 131072 points, one thread", "point_ops_peers_cpu",
     "knn B=1 N=131072 M=4096", "dtrain_1thread", "ms", "ms", 1),
    ("checkpoint wait, ssg with Adam (background writer)", "checkpoint_cpu", "ssg",
     "dtrain background", "ms", "ms", 1),
]


def load(results):
    """{csv name: [rows]} of every comparison CSV in results."""
    tables = {}
    for name in sorted(os.listdir(results)):
        if not name.endswith(".csv") or name.endswith("_rounds.csv"):
            continue
        rows = stats.read_csv(os.path.join(results, name))
        if rows and set(stats.COMPARISON_COLUMNS) <= set(rows[0]):
            tables[name[:-4]] = rows
    return tables


def find(tables, table, case, ours, theirs):
    for row in tables.get(table, []):
        if (row["case"], row["dtrain"], row["peer"]) == (case, ours, theirs):
            return row
    return None


def num(value, digits=3):
    x = float(value)
    return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:.0f}"


def ratio_cell(row):
    return f"{num(row['ratio'])}x ({num(row['ratio_q1'])}-{num(row['ratio_q3'])})"


def side_cell(row, side):
    return (f"{num(row[f'{side}_ms'])} ({num(row[f'{side}_q1_ms'])}-{num(row[f'{side}_q3_ms'])}; "
            f"{num(row[f'{side}_min_ms'])})")


def headline_table(tables):
    lines = ["| benchmark | case | dtrain | peer | peer time / dtrain time (IQR) | "
             "dtrain ms (IQR; fastest) | peer ms (IQR; fastest) | verdict | rounds |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for what, table, case, ours, theirs in HEADLINE:
        row = find(tables, table, case, ours, theirs)
        if row is None:
            lines.append(f"| {what} | {case} | {ours} | {theirs} | not run | | | | |")
            continue
        lines.append(f"| {what} | {case} | {ours} | {theirs} | {ratio_cell(row)} | "
                     f"{side_cell(row, 'dtrain')} | {side_cell(row, 'peer')} | "
                     f"{row['verdict']} | {row['rounds']} |")
    return lines


def origins(tables):
    found = sorted({(r["commit"], r["machine"]) for rows in tables.values() for r in rows})
    return "; ".join(f"commit {c} on {m}" for c, m in found) or "no results"


def machines(tables):
    return ", ".join(sorted({r["machine"] for rows in tables.values() for r in rows})) or "no results"


# The README names the machines only: the commits are SUMMARY.md's, beside every figure.
def readme_block(tables):
    return ([BEGIN, f"Made by `benchmarks/report/summary.py` from `benchmarks/results/*.csv` "
             f"(measured on {machines(tables)}); the commit, every figure, the absolute ones, the "
             "GPU's and the scaling model: "
             "[benchmarks/results/SUMMARY.md](benchmarks/results/SUMMARY.md).", ""]
            + headline_table(tables) + [END])


def absolute_table(results, tables):
    lines = ["| figure | dtrain | spread over rounds (q1-q3; fastest) | machine | commit |",
             "| --- | --- | --- | --- | --- |"]
    for what, table, case, impl, column, unit, scale in ABSOLUTE:
        path = os.path.join(results, f"{table}_rounds.csv")
        rows = stats.read_csv(path) if os.path.exists(path) else []
        if not rows or not set(stats.ROUND_COLUMNS + [column]) <= set(rows[0]):
            rows = []  # not run, or a CSV of another format
        rows = [r for r in rows if r["case"] == case and r["impl"] == impl]
        values = [float(r[column]) * scale for r in rows if stats.number(r[column]) is not None]
        if not values:
            lines.append(f"| {what} | not run | | | |")
            continue
        q1, med, q3 = stats.quartiles(values)
        best = max(values) if unit == "GB/s" else min(values)
        lines.append(f"| {what} | {num(med)} {unit} | {num(q1)}-{num(q3)}; {num(best)} | "
                     f"{rows[0]['machine']} | {rows[0]['commit'][:12]} |")
    return lines


def not_faster(tables):
    lines = ["| benchmark | case | dtrain | peer | ratio (IQR) | verdict |",
             "| --- | --- | --- | --- | --- | --- |"]
    for table, rows in tables.items():
        for row in rows:
            if row["verdict"] != "faster":
                lines.append(f"| {table} | {row['case']} | {row['dtrain']} | {row['peer']} | "
                             f"{ratio_cell(row)} | {row['verdict']} |")
    return lines


def every_comparison(tables):
    lines = []
    for table, rows in tables.items():
        lines += ["", f"### {table}.csv", "", f"Settings: {rows[0]['settings']}", "",
                  "| case | dtrain | peer | ratio (IQR) | dtrain ms (IQR; fastest) | "
                  "peer ms (IQR; fastest) | verdict | rounds |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {r['case']} | {r['dtrain']} | {r['peer']} | {ratio_cell(r)} | "
                  f"{side_cell(r, 'dtrain')} | {side_cell(r, 'peer')} | {r['verdict']} | "
                  f"{r['rounds']} |" for r in rows]
    return lines


def scaling_section(results):
    path = os.path.join(results, "scaling_model.csv")
    if not os.path.exists(path):
        return ["Not run (`bash benchmarks/run_scaling.sh`)."]
    rows = stats.read_csv(path)
    lines = [f"From `scaling_model.csv` ({rows[0]['machine']}, commit {rows[0]['commit'][:12]}; "
             "Note [DDP scaling model] in `benchmarks/report/scaling_model.py`; plot "
             "`scaling_model.png`). Check against dtrain's DDP step on CPU ranks here (the "
             "slowest rank's mean step of a block, median over rounds with quartiles; the error "
             "is the median of the per-round ratios of prediction to measurement). The "
             "prediction is the synchronous compute step measured at that many ranks (a "
             "barrier per step, no gradient traffic), plus the engine's own cost (measured at 1 "
             "rank, so 1 rank is the calibration), plus the fitted all-reduce of the gradient's "
             "buckets; overlap hides communication only where a core is left for it:", "",
             "| model | ranks | measured ms (IQR) | predicted ms, overlap | error | "
             "predicted ms, no overlap | error |", "| --- | --- | --- | --- | --- | --- | --- |"]
    checks = [r for r in rows if r["kind"] == "check"]
    for r in checks:
        if r["overlap"] != "yes":
            continue
        other = next(o for o in checks if (o["model"], o["ranks"], o["overlap"])
                     == (r["model"], r["ranks"], "no"))
        lines.append(f"| {r['model']} | {r['ranks']} | {num(r['measured_ms'])} "
                     f"({num(r['measured_q1_ms'])}-{num(r['measured_q3_ms'])}) | "
                     f"{num(r['step_ms'])} | {float(r['error_pct']):+.1f}% | "
                     f"{num(other['step_ms'])} | {float(other['error_pct']):+.1f}% |")
    worst = max((abs(float(r["error_pct"])) for r in checks
                 if r["overlap"] == "yes" and r["ranks"] != "1"), default=None)
    if worst is not None:
        lines += ["", f"Largest error of the overlap model beyond 1 rank: {worst:.1f}% "
                  f"({'within' if worst <= 15 else 'NOT within'} 15%)."]
    cluster = [r for r in rows if r["kind"] == "cluster"]
    if cluster:
        lines += ["", f"Predicted on GPUs ({cluster[0]['interconnect']}): the shortest GPU step "
                  "that still scales at 90% efficiency, with and without bucket overlap; "
                  "efficiency where a GPU step was measured.", "",
                  "| model | GPUs | gradient MiB | all-reduce ms | break-even step ms, overlap | "
                  "no overlap | measured GPU step: efficiency, overlap / none |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in cluster:
            if r["overlap"] != "yes" or not r["compute_source"].startswith("break-even") \
                    or r["ranks"] not in ("8", "64", "512"):
                continue
            same = [o for o in cluster if (o["model"], o["ranks"]) == (r["model"], r["ranks"])]
            none = next(o for o in same if o["overlap"] == "no"
                        and o["compute_source"] == r["compute_source"])
            measured = [o for o in same if not o["compute_source"].startswith("break-even")]
            gpu = " / ".join(f"{float(o['efficiency']):.0%}" for o in measured) or "not run"
            lines.append(f"| {r['model']} | {r['ranks']} | {num(r['gradient_mb'])} | "
                         f"{num(r['allreduce_ms'])} | {num(r['compute_ms'])} | "
                         f"{num(none['compute_ms'])} | {gpu} |")
    fits = os.path.join(results, "allreduce_fit.csv")
    if os.path.exists(fits):
        lines += ["", "All-reduce cost fitted per backend (2 ranks, ring: "
                  "T = 2(p-1) alpha + 2(p-1)/p n beta):", "",
                  "| backend | alpha per step | bus bandwidth 1/beta | worst size off by |",
                  "| --- | --- | --- | --- |"]
        lines += [f"| {f['backend']} | {num(f['alpha_us'])} us | {num(f['bus_gbps'])} GB/s | "
                  f"{float(f['max_error_pct']):.0f}% |" for f in stats.read_csv(fits)]
    return lines


def recipes_section(results):
    """recipes_cpu.csv (benchmarks/run_recipes.sh): each training recipe's
    last-epoch test accuracy and loss over seeds, everything else alike."""
    rows = stats.read_csv(os.path.join(results, "recipes_cpu.csv"))
    if not rows:
        return ["not run"]
    lines = [f"From `recipes_cpu.csv` ({rows[0]['machine']}, commit {rows[0]['commit'][:12]}): "
             f"the main job of `scripts/run.sh` for {rows[0]['epochs']} epochs, once per seed and "
             "recipe; the median over seeds, with the lowest and highest.", "",
             "| recipe | seeds | test accuracy | test loss |", "| --- | --- | --- | --- |"]
    for recipe in dict.fromkeys(r["recipe"] for r in rows):
        mine = [r for r in rows if r["recipe"] == recipe]
        accuracy = sorted(float(r["test_accuracy"]) for r in mine)
        loss = sorted(float(r["test_loss"]) for r in mine)
        median = stats.quartiles(accuracy)[1]
        lines.append(f"| {recipe} | {len(mine)} | {median:.3f} ({accuracy[0]:.3f}-"
                     f"{accuracy[-1]:.3f}) | {stats.quartiles(loss)[1]:.3f} |")
    return lines


def summary(results):
    tables = load(results)
    lines = ["# Benchmark summary", "",
             "Made by `benchmarks/report/summary.py` from the CSVs in this folder (written by "
             "`bash benchmarks/run_all.sh`); not edited by hand. Ratios are peer time / dtrain "
             "time (above 1: dtrain is faster), the median of the per-round ratios with their "
             "interquartile range; times are the median over rounds, the interquartile range and "
             "the fastest round. A verdict of faster or slower needs the two sides' interquartile "
             "ranges not to overlap; otherwise it is \"no difference\" (Note [Benchmark verdicts] "
             "in `benchmarks/report/stats.py`). Each CSV's settings column says what both sides "
             "ran under.", "", f"Results: {origins(tables)}.", "", "## Headline ratios", ""]
    lines += headline_table(tables)
    lines += ["", "## Absolute figures", ""] + absolute_table(results, tables)
    lines += ["", "## Where dtrain is not faster", ""] + not_faster(tables)
    lines += ["", "## GPU", ""] + gpu_section.lines(results)
    lines += ["", "## Scaling model", ""] + scaling_section(results)
    lines += ["", "## Training recipes", ""] + recipes_section(results)
    lines += ["", "## Every comparison"] + every_comparison(tables)
    return "\n".join(lines) + "\n"


def replace_block(text, block):
    if BEGIN not in text or END not in text:
        sys.exit(f"summary.py: the README has no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    return head + "\n".join(block) + rest.split(END, 1)[1]


def differs(label, old, new):
    if old == new:
        return False
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), label, "generated", lineterm="")
    print("\n".join(list(diff)[:40]), file=sys.stderr)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=os.path.join(REPO, "benchmarks", "results"))
    parser.add_argument("--readme", help="also write the README's performance table")
    parser.add_argument("--check", metavar="README",
                        help="write nothing; exit 1 unless SUMMARY.md and README's table are "
                             "what the CSVs make")
    args = parser.parse_args()
    text = summary(args.results)
    path = os.path.join(args.results, "SUMMARY.md")
    if args.check:
        readme = open(args.check).read()
        stale = differs(path, open(path).read() if os.path.exists(path) else "", text)
        made = replace_block(readme, readme_block(load(args.results)))
        stale |= differs(args.check, readme, made)
        if stale:
            print("summary.py: run python benchmarks/report/summary.py --readme README.md "
                  "(the committed CSVs make another summary)", file=sys.stderr)
            return 1
        return 0
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {path}")
    if args.readme:
        readme = open(args.readme).read()
        with open(args.readme, "w") as f:
            f.write(replace_block(readme, readme_block(load(args.results))))
        print(f"wrote the performance table of {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
