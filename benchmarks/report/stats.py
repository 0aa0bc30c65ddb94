"""What every benchmark report shares: the rounds CSV, the comparison of
dtrain with a peer over rounds, the verdict, the provenance columns and the
ratio plot.

Note [Benchmark verdicts]
~~~~~~~~~~~~~~~~~~~~~~~~~
A runner times dtrain and its peers in rounds: every round holds one timing
of each (a block of steps, one call, one process), taken close together so
that a drift of the shared machine's speed falls on all of them (Note
[Lockstep benchmarks] in benchmarks/support/lockstep.h). A comparison of
dtrain with one peer then reports
  - each side's median over rounds, its interquartile range (q1-q3) and its
    fastest round;
  - ratio = peer time / dtrain time (above 1: dtrain is faster), the median
    of the per-round ratios, with their quartiles;
  - a verdict: "faster" only when dtrain's interquartile range lies wholly
    below the peer's (dtrain q3 < peer q1), "slower" when wholly above, and
    "no difference" when the two ranges overlap, whatever the medians say.
A smoke run's single round has a range of one point; its verdict means
little, as its numbers do.

Every CSV a report writes starts with commit (git rev-parse HEAD, "-dirty"
when tracked files other than benchmarks/results/ differ from it), machine
(CPU model x cores) and settings (what both sides ran under), from the
environment that benchmarks/common.sh exports, so a row says where it came
from.
"""

import csv
import math
import os
import re
import statistics
import subprocess
import sys

PROVENANCE = ["commit", "machine", "settings"]
ROUND_COLUMNS = PROVENANCE + ["case", "impl", "round", "ms"]
COMPARISON_COLUMNS = PROVENANCE + [
    "case", "dtrain", "peer", "rounds",
    "dtrain_ms", "dtrain_q1_ms", "dtrain_q3_ms", "dtrain_min_ms",
    "peer_ms", "peer_q1_ms", "peer_q3_ms", "peer_min_ms",
    "ratio", "ratio_q1", "ratio_q3", "verdict"]
VERDICTS = ("faster", "slower", "no difference")
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def git_commit(repo=REPO):
    """HEAD, with "-dirty" when tracked files outside benchmarks/results differ."""
    try:
        head = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    clean = subprocess.run(["git", "-C", repo, "diff", "--quiet", "HEAD", "--", ".",
                            ":(exclude)benchmarks/results"]).returncode == 0
    return head if clean else head + "-dirty"


def cpu_machine():
    """"<CPU model> x <cores>", the way every results CSV names its machine."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{' '.join(model.split())} x {os.cpu_count()}"


def machine_cores(machine):
    """The core count of a machine column written by cpu_machine()."""
    found = re.search(r" x (\d+)$", machine)
    if not found:
        sys.exit(f"stats.py: machine '{machine}' does not end in ' x <cores>'")
    return int(found.group(1))


def provenance(settings):
    """The three leading columns: commit and machine from DTRAIN_BENCH_COMMIT
    and DTRAIN_BENCH_MACHINE (benchmarks/common.sh sets both once per run),
    else found now."""
    return {"commit": os.environ.get("DTRAIN_BENCH_COMMIT") or git_commit(),
            "machine": os.environ.get("DTRAIN_BENCH_MACHINE") or cpu_machine(),
            "settings": settings}


def quartiles(values):
    """(q1, median, q3) of one or more values (inclusive method: a single
    value is its own range)."""
    values = sorted(values)
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def verdict(dtrain_q1, dtrain_q3, peer_q1, peer_q3):
    """Note [Benchmark verdicts]: faster or slower only without overlap."""
    if dtrain_q3 < peer_q1:
        return "faster"
    if dtrain_q1 > peer_q3:
        return "slower"
    return "no difference"


def compare(ours, theirs):
    """ours, theirs: {round: ms} of dtrain and one peer in one case. The
    rounds both have are compared; None when they share none."""
    shared = sorted(ours.keys() & theirs.keys())
    if not shared:
        return None
    a = [ours[r] for r in shared]
    b = [theirs[r] for r in shared]
    a_q1, a_med, a_q3 = quartiles(a)
    b_q1, b_med, b_q3 = quartiles(b)
    r_q1, r_med, r_q3 = quartiles([y / x for x, y in zip(a, b)])
    return {"rounds": len(shared),
            "dtrain_ms": a_med, "dtrain_q1_ms": a_q1, "dtrain_q3_ms": a_q3, "dtrain_min_ms": min(a),
            "peer_ms": b_med, "peer_q1_ms": b_q1, "peer_q3_ms": b_q3, "peer_min_ms": min(b),
            "ratio": r_med, "ratio_q1": r_q1, "ratio_q3": r_q3,
            "verdict": verdict(a_q1, a_q3, b_q1, b_q3)}


def fmt(value):
    """Four significant digits: a ratio of 0.004 must not print as 0.00."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return value


def write_csv(path, columns, rows):
    """rows: dicts; every column must be present (blank allowed)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="raise")
        writer.writeheader()
        for row in rows:
            writer.writerow({c: fmt(row[c]) for c in columns})


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(text):
    """A finite float, or None."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def plot_comparisons(rows, png, title):
    """One horizontal bar per comparison: the median ratio with its
    quartiles, coloured by verdict, a line at 1. Nothing when matplotlib is
    not importable (the caller says so)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not importable by {sys.executable}; no plot {png}", file=sys.stderr)
        return False
    colours = {"faster": "tab:green", "slower": "tab:red", "no difference": "tab:grey"}
    labels = [f"{r['case']}: {r['dtrain']} / {r['peer']}" for r in rows]
    ratios = [float(r["ratio"]) for r in rows]
    low = [max(x - float(r["ratio_q1"]), 0) for x, r in zip(ratios, rows)]
    high = [max(float(r["ratio_q3"]) - x, 0) for x, r in zip(ratios, rows)]
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.28 * len(rows)))
    y = list(range(len(rows)))[::-1]
    ax.barh(y, ratios, xerr=[low, high], capsize=2,
            color=[colours[r["verdict"]] for r in rows])
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    if max(ratios) / max(min(ratios), 1e-9) > 20:
        ax.set_xscale("log")
    ax.set_xlabel("peer time / dtrain time, median of rounds with quartiles "
                  "(green: faster, grey: no difference, red: slower)", fontsize=8)
    first = rows[0]
    ax.set_title(f"{title}\n{first['machine']}, commit {first['commit'][:12]}", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return True


def stamp(argv):
    """stats.py stamp --settings S IN OUT: IN's rows with the provenance
    columns in front (for a program's own table that compares nothing)."""
    import argparse
    parser = argparse.ArgumentParser(prog="stats.py stamp", description=stamp.__doc__)
    parser.add_argument("--settings", required=True)
    parser.add_argument("input")
    parser.add_argument("output")
    args = parser.parse_args(argv)
    rows = read_csv(args.input)
    if not rows:
        sys.exit(f"stats.py stamp: {args.input} has no rows")
    head = provenance(args.settings)
    write_csv(args.output, PROVENANCE + list(rows[0]), [{**head, **row} for row in rows])


if __name__ == "__main__":
    if sys.argv[1:2] == ["stamp"]:
        stamp(sys.argv[2:])
    else:  # the commit and machine lines benchmarks/common.sh exports
        print(git_commit())
        print(cpu_machine())
