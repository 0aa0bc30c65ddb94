"""The raw CSVs of the benchmark programs and their peers, as one rounds CSV
(stats.ROUND_COLUMNS: commit, machine, settings, case, impl, round, ms, and
the format's extra columns), the input of compare.py.

  python rounds.py FORMAT --settings "..." --out X_rounds.csv RAW.csv...

FORMAT says which programs wrote RAW:
  ddp         bench_ddp / ddp_torch.py: one row per round and participant
              (impl, model, mode, world, batch_per_rank, round, step_ms_median,
              step_ms_mean, backward_ms_median, hidden_pct, parameters); impl becomes
              "<impl>-<mode>"
  train       bench_pointnet2_train / pointnet2_train_torch.py: one row per
              process; the k-th row of an (impl, configuration) is round k
  amp         bench_amp_toycnn / amp_toycnn_torch.py: as train; impl becomes
              "<impl> fp32|bf16|fp16"
  allreduce   bench_allreduce / allreduce_torch.py: one file per harness and
              round, named <anything>_<round>.csv; ms is a call's time
  checkpoint  bench_checkpoint / checkpoint_torch.py: as train; impl becomes
              "<impl> <mode>"
  bnrelu      bench_batch_norm_relu: one row per shape, impl and round
  plain       already case, impl, round, ms (the Python peers that time dtrain
              in the same process); every other column is kept
"""

import argparse
import os
import re
import sys
from collections import defaultdict

import stats


def ordered_rounds(rows, key):
    """Round numbers by order of appearance of each key(row)."""
    seen = defaultdict(int)
    for row in rows:
        k = key(row)
        yield row, seen[k]
        seen[k] += 1


def ddp(rows):
    for row in rows:
        yield {"case": f"{row['model']} b{row['batch_per_rank']} w{row['world']}",
               "impl": f"{row['impl']}-{row['mode']}", "round": int(row["round"]),
               "ms": float(row["step_ms_median"]), "backward_ms": row["backward_ms_median"],
               "hidden_pct": row["hidden_pct"], "parameters": row["parameters"],
               "mean_ms": row["step_ms_mean"]}


def train(rows):
    def case(row):
        return f"{row['preset']} {row['batch_size']}x{row['points']}"
    for row, n in ordered_rounds(rows, lambda r: (case(r), r["impl"])):
        yield {"case": case(row), "impl": row["impl"], "round": n,
               "ms": float(row["step_ms_median"]), "peak_rss_mb": row["peak_rss_mb"]}


PRECISION = {"off": "fp32", "bf16": "bf16", "fp16": "fp16"}


def amp(rows):
    def case(row):
        return f"batch {row['batch_size']}"
    for row, n in ordered_rounds(rows, lambda r: (case(r), r["impl"], r["precision"])):
        yield {"case": case(row), "impl": f"{row['impl']} {PRECISION[row['precision']]}",
               "round": n, "ms": float(row["step_ms_median"]),
               "peak_rss_mb": row["peak_rss_mb"]}


def size_name(nbytes):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def allreduce(rows):
    for row in rows:
        nbytes = int(row["bytes"])
        yield {"case": size_name(nbytes), "impl": row["impl"], "round": row["_round"],
               "ms": float(row["time_us"]) / 1000, "bytes": nbytes,
               "busbw_gbps": row["busbw_gbps"]}


def checkpoint(rows):
    def case(row):
        return row["preset"]
    for row, n in ordered_rounds(rows, lambda r: (case(r), r["impl"], r["mode"])):
        yield {"case": case(row), "impl": f"{row['impl']} {row['mode']}", "round": n,
               "ms": float(row["median_ms"]), "file_mb": row["file_mb"]}


def bnrelu(rows):
    for row in rows:
        yield {"case": (f"({row['batch']},{row['channels']},{row['centres']},"
                        f"{row['neighbours']}) {row['dtype']}"),
               "impl": row["impl"], "round": int(row["round"]), "ms": float(row["ms"])}


def plain(rows):
    for row in rows:
        yield {k: v for k, v in row.items() if k != "_round"}


FORMATS = {"ddp": (ddp, ["backward_ms", "hidden_pct", "parameters", "mean_ms"]),
           "train": (train, ["peak_rss_mb"]),
           "amp": (amp, ["peak_rss_mb"]), "allreduce": (allreduce, ["bytes", "busbw_gbps"]),
           "checkpoint": (checkpoint, ["file_mb"]), "bnrelu": (bnrelu, []),
           "plain": (plain, None)}


def read_raw(paths, by_file_round):
    rows = []
    for path in paths:
        round_ = None
        if by_file_round:
            found = re.search(r"_(\d+)\.csv$", os.path.basename(path))
            if not found:
                sys.exit(f"rounds.py: {path}: the file name must end in _<round>.csv")
            round_ = int(found.group(1))
        for row in stats.read_csv(path):
            rows.append({**row, "_round": round_})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("format", choices=sorted(FORMATS))
    parser.add_argument("--settings", required=True, help="what every side ran under")
    parser.add_argument("--out", required=True)
    parser.add_argument("raw", nargs="+")
    args = parser.parse_args()
    convert, extras = FORMATS[args.format]
    head = stats.provenance(args.settings)
    rows = [{**head, **row} for row in convert(read_raw(args.raw, args.format == "allreduce"))]
    if not rows:
        sys.exit(f"rounds.py: no rows in {args.raw}")
    if extras is None:  # plain: whatever else the peer wrote
        extras = [c for c in rows[0] if c not in stats.ROUND_COLUMNS]
    stats.write_csv(args.out, stats.ROUND_COLUMNS + extras, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
