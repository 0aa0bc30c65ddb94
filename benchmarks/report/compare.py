"""dtrain against its peers, from a rounds CSV: one row per case and pair,
with medians, interquartile ranges, fastest rounds, the ratio and the
verdict of Note [Benchmark verdicts] (benchmarks/report/stats.py).

  python compare.py --rounds X_rounds.csv --pairs dtrain:torch[,a:b...] --out X.csv \\
      [--extra peak_rss_mb ...] [--png X.png --title "..."]

Input: the columns of stats.ROUND_COLUMNS (commit, machine, settings, case,
impl, round, ms) and any others; every row of one commit and machine.
--pairs names, per comparison, dtrain's impl and the peer's; a case that
lacks either is skipped. --extra columns of the input are carried per side
as dtrain_<column> and peer_<column> (the median over rounds when numeric,
else the first value). Output: stats.COMPARISON_COLUMNS plus those.
"""

import argparse
import statistics
import sys
from collections import defaultdict

import stats


def side_value(rows, column):
    values = [row[column] for row in rows if row.get(column, "") != ""]
    numbers = [stats.number(v) for v in values]
    if values and all(n is not None for n in numbers):
        return statistics.median(numbers)
    return values[0] if values else ""


def comparisons(rows, pairs, extras):
    """Comparison dicts in case order (first appearance), then pair order."""
    origin = {(row["commit"], row["machine"]) for row in rows}
    if len(origin) != 1:
        sys.exit(f"compare.py: rows of several commits or machines {sorted(origin)}; "
                 "one run at a time")
    cases = list(dict.fromkeys(row["case"] for row in rows))
    times = defaultdict(dict)  # (case, impl) -> {round: ms}
    by_impl = defaultdict(list)
    settings = {}
    for row in rows:
        key = (row["case"], row["impl"])
        if row["round"] in times[key]:
            sys.exit(f"compare.py: {key} has round {row['round']} twice")
        times[key][row["round"]] = float(row["ms"])
        by_impl[key].append(row)
        settings.setdefault(row["case"], row["settings"])
    out = []
    for case in cases:
        for ours, theirs in pairs:
            if (case, ours) not in times or (case, theirs) not in times:
                continue
            result = stats.compare(times[(case, ours)], times[(case, theirs)])
            if result is None:
                continue
            row = {"commit": rows[0]["commit"], "machine": rows[0]["machine"],
                   "settings": settings[case], "case": case, "dtrain": ours, "peer": theirs,
                   **result}
            for column in extras:
                row[f"dtrain_{column}"] = side_value(by_impl[(case, ours)], column)
                row[f"peer_{column}"] = side_value(by_impl[(case, theirs)], column)
            out.append(row)
    return out


def parse_pairs(text):
    pairs = []
    for item in text.split(","):
        ours, sep, theirs = item.partition(":")
        if not sep or not ours or not theirs:
            sys.exit(f"compare.py: --pairs wants DTRAIN_IMPL:PEER_IMPL items, got '{item}'")
        pairs.append((ours, theirs))
    return pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", required=True, help="rounds CSV (stats.ROUND_COLUMNS)")
    parser.add_argument("--pairs", required=True, help="DTRAIN_IMPL:PEER_IMPL,...")
    parser.add_argument("--extra", nargs="*", default=[], help="columns carried per side")
    parser.add_argument("--out", required=True)
    parser.add_argument("--png", default="")
    parser.add_argument("--title", default="dtrain against its peers")
    args = parser.parse_args()
    rows = stats.read_csv(args.rounds)
    if not rows:
        sys.exit(f"compare.py: {args.rounds} has no rows")
    missing = [c for c in stats.ROUND_COLUMNS + args.extra if c not in rows[0]]
    if missing:
        sys.exit(f"compare.py: {args.rounds} lacks the columns {missing}")
    out = comparisons(rows, parse_pairs(args.pairs), args.extra)
    if not out:
        sys.exit(f"compare.py: no case of {args.rounds} has both sides of a pair in --pairs")
    columns = stats.COMPARISON_COLUMNS + [f"{side}_{c}" for c in args.extra
                                          for side in ("dtrain", "peer")]
    stats.write_csv(args.out, columns, out)
    width = max(len(r["case"]) for r in out)
    for r in out:
        print(f"{r['case']:<{width}}  {r['dtrain']} {r['dtrain_ms']:.4g} ms "
              f"({r['dtrain_q1_ms']:.4g}-{r['dtrain_q3_ms']:.4g})  {r['peer']} "
              f"{r['peer_ms']:.4g} ms ({r['peer_q1_ms']:.4g}-{r['peer_q3_ms']:.4g})  "
              f"ratio {r['ratio']:.3g} ({r['ratio_q1']:.3g}-{r['ratio_q3']:.3g}) "
              f"over {r['rounds']} rounds: {r['verdict']}")
    print(f"wrote {args.out}")
    if args.png and stats.plot_comparisons(stats.read_csv(args.out), args.png, args.title):
        print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
