"""The end of tests/gpu/run_gpu_checks.sh: one short report of the machine,
each step's outcome, the GPU tests' counts and the benchmarks' key numbers,
printed and written to OUT/gpu_summary.txt. Standard library only (it runs
under the GPU machine's python3).

Exit status: 0 when every step passed or was skipped for a stated reason,
3 when a step failed or ran out of time.
"""

import argparse
import csv
import os
import re
import sys

# The variants of the FPS kernels on registers that bench_pointnet2_ops
# times beside the default (its kRegisterVariants), and what each sets.
REGISTER_VARIANTS = {
    "registers_lane_tree": "register kernel, a thread's furthest point by a tree "
                           "(DTRAIN_CUDA_FPS_LANE=tree)",
    "registers_round2_lane_tree": "register kernel, rounds of two picks and the tree "
                                  "(ROUND=2, LANE=tree)",
    "registers_round4_lane_tree": "register kernel, rounds of four picks and the tree "
                                  "(ROUND=4, LANE=tree)",
    "leader_1024": "one warp picks, 1024 threads (DTRAIN_CUDA_FPS=leader)",
    "leader_512": "one warp picks, 512 threads (DTRAIN_CUDA_FPS=leader, THREADS=512)",
    "leader_512_round2": "one warp picks, rounds of two on 512 threads (leader, ROUND=2)",
    "leader_512_round4": "one warp picks, rounds of four on 512 threads (leader, ROUND=4)",
}


def read_steps(path):
    steps = []
    with open(path) as f:
        for line in f:
            name, status, seconds, note = (line.rstrip("\n").split("\t") + [""] * 4)[:4]
            steps.append((name, status, int(seconds or 0), note))
    return steps


def machine_lines(build_log):
    """The environment block the run script writes first."""
    lines = []
    with open(build_log) as f:
        for line in f:
            if line.startswith("====="):
                break
            if line.strip():
                lines.append("  " + line.rstrip())
    return lines


def test_lines(tests_log):
    if not os.path.exists(tests_log):
        return ["  no test log"]
    text = open(tests_log).read()
    # CTest 3 prints "N% tests passed, F tests failed out of T"; CTest 4
    # leaves out the failed count when nothing failed.
    total = re.search(r"(\d+)% tests passed(?:, (\d+) tests? failed)? out of (\d+)", text)
    if not total:
        return ["  ctest printed no result line (see gpu_tests.log)"]
    failed, count = int(total.group(2) or 0), int(total.group(3))
    skipped = re.findall(r"^\s*\d+ - (\S+) \(Skipped\)", text, re.M)
    failures = re.findall(r"^\s*\d+ - (\S+) \((?!Skipped)([^)]*)\)", text, re.M)
    lines = [f"  {count - failed - len(skipped)} passed, {failed} failed, "
             f"{len(skipped)} skipped, of {count} (label gpu)"]
    lines += [f"  FAILED {name} ({why})" for name, why in failures]
    return lines


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "  " + "  ".join(f"{{:>{w}}}" for w in widths)
    return [fmt.format(*header)] + [fmt.format(*r) for r in rows]


def pointnet2_lines(out):
    all_rows = read_csv(os.path.join(out, "gpu_pointnet2_ops.csv"))
    rows = [r for r in all_rows if r["B"] == "8" and r["impl"] == "dtrain"]
    if not rows:
        return []
    sizes = sorted({int(r["N"]) for r in rows})
    device = rows[0]["device"]
    ops = list(dict.fromkeys(r["op"] for r in rows))
    ms = {(r["op"], int(r["N"])): float(r["median_ms"]) for r in rows}
    body = [[op] + [f"{ms[(op, n)]:.3f}" if (op, n) in ms else "-" for n in sizes] for op in ops]
    lines = [f"PointNet++ ops, dtrain on {device}: median ms (B=8)"]
    lines += table(["op"] + [f"N={n}" for n in sizes], body)
    def ms_of(n):
        return ms.get(("furthest_point_sample", n), float("nan"))

    goal = {r["impl"]: float(r["median_ms"]) for r in all_rows
            if r["B"] == "32" and r["device"] != "cpu"}
    if "dtrain" in goal:
        line = (f"FPS B=32 N=8192 -> 1024: {goal['dtrain']:.3f} ms "
                f"(goal < 0.5 ms: {'met' if goal['dtrain'] < 0.5 else 'NOT met'})")
        for impl, what in (("one_block_per_cloud", "one block per cloud"),
                           ("one_block_per_cloud_global", "in global memory")):
            if impl in goal:
                line += (f"; {what} {goal[impl]:.3f} ms, "
                         f"{goal[impl] / goal['dtrain']:.1f}x slower")
        lines.append(line)
        # Each spatial kernel forced, beside the default (B=8, npoint=N/4).
        forced = {}
        for r in all_rows:
            if (r["B"] == "8" and r["op"] == "furthest_point_sample"
                    and r["impl"] in ("registers", *REGISTER_VARIANTS, "striped_round4",
                                      "chunks")):
                forced.setdefault(r["impl"], {})[int(r["N"])] = float(r["median_ms"])
        for impl, by_size in sorted(forced.items()):
            lines.append(f"  FPS forced to {impl} (B=8, npoint=N/4; default in brackets): " +
                         ", ".join(f"N={n} {ms:.3f} ms ({ms_of(n):.3f})"
                                   for n, ms in sorted(by_size.items())))
        for impl, what in REGISTER_VARIANTS.items():
            if impl in goal:
                lines.append(f"  {what}: {goal[impl]:.3f} ms, "
                             f"{goal['dtrain'] / goal[impl]:.2f}x the default "
                             f"(goal {'met' if goal[impl] < 0.5 else 'NOT met'})")
        # What the default measured to choose its kernel (bench_pointnet2_ops
        # prints it; Note [Choosing the CUDA FPS kernel by timing it]).
        bench_log = os.path.join(out, "gpu_bench.log")
        if os.path.exists(bench_log):
            prefix = "FPS kernel measured for "
            with open(bench_log) as f:
                lines += ["  default: " + line[len(prefix):].rstrip()
                          for line in f if line.startswith(prefix)]
        # The fastest setting at the goal; every row's picks equal the default's.
        timed = {impl: ms for impl, ms in goal.items() if not impl.startswith("one_block")}
        fastest = min(timed, key=timed.get)
        lines.append(f"  fastest at the goal: {fastest} {timed[fastest]:.3f} ms "
                     f"(goal {'met' if timed[fastest] < 0.5 else 'NOT met'}"
                     + ("; the default" if fastest == "dtrain" else
                        f"; {goal['dtrain'] / timed[fastest]:.2f}x the default") + ")")
        striped = sorted((impl, ms) for impl, ms in goal.items() if impl.startswith("striped"))
        if striped:
            best_impl, best_ms = min(striped, key=lambda item: item[1])
            lines.append("  striped kernel (DTRAIN_CUDA_FPS=striped): " + ", ".join(
                f"{impl.replace('striped_', '')} {ms:.3f} ms" for impl, ms in striped) +
                f"; best {best_impl} {best_ms:.3f} ms "
                f"(goal {'met' if best_ms < 0.5 else 'NOT met'}; "
                f"{goal['dtrain'] / best_ms:.2f}x the default)")
    vs = [r for r in read_csv(os.path.join(out, "gpu_pointnet2_ops_vs_torch.csv"))
          if r["impl"] == "dtrain"]
    if vs:
        peer_sizes = sorted({int(r["N"]) for r in vs})
        speed = {(r["op"], int(r["N"])): r["speedup_vs_torch"] or "-" for r in vs}
        disagree = sorted({f"{r['op']} N={r['N']} ({r['agreement']})" for r in vs
                           if r["agreement"] != "1.0000"})
        lines.append("dtrain's speed-up over pure PyTorch, same process (torch ms / dtrain ms)")
        body = [[op] + [speed.get((op, n), "-") for n in peer_sizes]
                for op in dict.fromkeys(r["op"] for r in vs)]
        lines += table(["op"] + [f"N={n}" for n in peer_sizes], body)
        lines.append("  outputs differing from exact PyTorch (share equal): "
                     + (", ".join(disagree) if disagree else "none"))
    return lines


def allreduce_lines(out):
    rows = read_csv(os.path.join(out, "gpu_allreduce_nccl.csv"))
    if not rows:
        return []
    body = [[r["bytes"], f"{float(r['time_us']):.1f}", f"{float(r['algbw_gbps']):.2f}"] for r in rows]
    return ["all_reduce on nccl, one rank (per-call cost; busbw is 0 for one rank)"] + table(
        ["bytes", "time_us", "algbw_GB/s"], body)


def amp_lines(out):
    rows = read_csv(os.path.join(out, "gpu_amp_toycnn.csv"))
    if not rows:
        return []

    def ms(r):
        return float(r["step_ms_median"])

    def mb(r):
        return f"{float(r['peak_device_mb']):.1f}" if r.get("peak_device_mb") else "-"

    body = [[r["impl"], r["precision"], r["batch_size"], f"{ms(r):.3f}",
             f"{float(r['samples_per_s']):.0f}", mb(r)] for r in rows]
    lines = ["toy CNN training step on the GPU (peak_MiB: allocator peak over the steps)"]
    lines += table(["impl", "precision", "batch", "step_ms", "samples/s", "peak_MiB"], body)
    by = {(r["impl"], r["precision"]): r for r in rows}
    precisions = list(dict.fromkeys(r["precision"] for r in rows))
    # Same-run ratios: dtrain against torch at each precision, and autocast
    # against fp32 within each implementation (> 1: faster, or less memory).
    vs_torch = [f"{p} {ms(by['torch', p]) / ms(by['dtrain', p]):.2f}x" for p in precisions
                if ("torch", p) in by and ("dtrain", p) in by]
    if vs_torch:
        lines.append("  dtrain's speed-up over torch (torch ms / dtrain ms): "
                     + ", ".join(vs_torch))
    def gain(fp32, low):
        text = f"{low['precision']} {ms(fp32) / ms(low):.2f}x time"
        if fp32.get("peak_device_mb") and low.get("peak_device_mb"):
            text += f", {float(fp32['peak_device_mb']) / float(low['peak_device_mb']):.2f}x memory"
        return text

    for impl in dict.fromkeys(r["impl"] for r in rows):
        fp32 = by.get((impl, "off"))
        gains = [gain(fp32, by[impl, p]) for p in precisions
                 if p != "off" and fp32 and (impl, p) in by]
        if gains:
            lines.append(f"  {impl}, autocast against fp32 (fp32 / autocast): " + "; ".join(gains))
    return lines


def train_lines(path):
    rows = read_csv(path) if path else []
    if not rows:
        return []
    body = [[r["impl"], r["preset"], f"{r['batch_size']} x {r['points']}",
             f"{float(r['step_ms_median']):.1f}", f"{float(r['samples_per_s']):.1f}"] for r in rows]
    return ["PointNet++ training steps: the classifier with its set abstractions in either "
            "layout; part segmentation (_partseg) with its propagations and head on rows or "
            "channel-major"] + table(
        ["impl", "preset", "batch x points", "step_ms", "clouds/s"], body)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", required=True, help="TSV: step, status, seconds, note")
    parser.add_argument("--out", required=True, help="the run's output folder")
    parser.add_argument("--train-csv", help="bench_pointnet2_train's rows, when it ran")
    args = parser.parse_args()

    steps = read_steps(args.steps)
    lines = ["dtrain GPU checks", "", "machine:"]
    build_log = os.path.join(args.out, "gpu_build.log")
    if os.path.exists(build_log):
        lines += machine_lines(build_log)
    lines += ["", "steps:"]
    lines += table(["step", "status", "s", "note"],
                   [[n, s, str(t), note] for n, s, t, note in steps])
    lines += ["", "tests:"] + test_lines(os.path.join(args.out, "gpu_tests.log"))
    for part in (pointnet2_lines, allreduce_lines, amp_lines):
        block = part(args.out)
        if block:
            lines += [""] + block
    block = train_lines(args.train_csv)
    if block:
        lines += [""] + block
    bad = [n for n, s, _, _ in steps if s not in ("ok", "skipped")]
    lines += ["", "RESULT: " + ("all steps passed" if not bad else "problems in " + ", ".join(bad))]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "gpu_summary.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 3 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
