"""The end of tests/gpu/run_gpu_checks.sh: one report of the machine, each
step's outcome, every GPU test's outcome and the figures the run exists for,
printed and written to OUT/gpu_summary.txt. Nobody edits it: every line comes
from the run's logs and CSVs. Standard library only (it runs under the GPU
machine's python3).

Lines that tools read, each exactly once (a figure the run did not produce
reads "not run"):

  commit: <40 hex digits>[ dirty <12 hex digits>]
  nccl_conformance world=<N>: passed | failed: <first failing case>    N = 2, 3, 4
  ddp_equivalence_nccl world=<N>: max_abs_diff=<x>                    N = 2, 3
  main_job_cuda precision=<p>: test_accuracy=<x> samples_per_s=<y> peak_device_mb=<z>
  main_job_cuda_sync_free: passed | failed: <the step's phase that synced>
  nccl_allreduce_vs_torch world=2 bytes=<n>: ratio=<torch ms / dtrain ms>   n = 4096, 1048576, 67108864
  pointnet2_step_vs_torch precision=<p>: ratio=<torch ms / dtrain ms>
  fps_b32_n8192_m1024_ms=<x>

Exit status: 0 when every step passed or was skipped for a stated reason,
3 when a step failed or ran out of time.
"""

import argparse
import csv
import os
import re
import sys

PRECISIONS = ("fp32", "bf16", "fp16")


def precision_of(impl):
    """The training-step benchmarks name autocast's type at the end of impl."""
    for precision in ("bf16", "fp16"):
        if impl.endswith("_" + precision):
            return precision
    return "fp32"


def read_steps(path):
    steps = []
    with open(path) as f:
        for line in f:
            name, status, seconds, note = (line.rstrip("\n").split("\t") + [""] * 4)[:4]
            steps.append((name, status, int(seconds or 0), note))
    return steps


def read_text(path):
    return open(path).read() if os.path.exists(path) else ""


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "  " + "  ".join(f"{{:>{w}}}" for w in widths)
    return [fmt.format(*header)] + [fmt.format(*r) for r in rows]


def machine_lines(build_log):
    """The environment block the run script writes first (its commit line apart)."""
    lines, commit = [], "commit: not run"
    for line in read_text(build_log).splitlines():
        if line.startswith("====="):
            break
        if line.startswith("commit: "):
            commit = line.strip()
        elif line.strip():
            lines.append("  " + line.rstrip())
    return commit, lines


# CTest's line for a finished test: " 3/53 Test  #3: Nccl.Versions ....   Passed    0.52 sec"
# (failures: "***Failed", "***Timeout", "***Exception: SegFault", "***Skipped").
TEST_LINE = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*(?:\*\*\*)?(.+?)\s+[\d.]+ sec\s*$",
                       re.M)


def test_lines(tests_log):
    outcomes = {}
    for name, status in TEST_LINE.findall(read_text(tests_log)):
        outcomes[name] = status.strip()
    if not outcomes:
        return ["  no GPU test ran (see gpu_tests.log)"]
    passed = sum(s == "Passed" for s in outcomes.values())
    skipped = sum(s.startswith("Skipped") for s in outcomes.values())
    failed = len(outcomes) - passed - skipped
    lines = [f"  {passed} passed, {failed} failed, {skipped} skipped, of {len(outcomes)} "
             "(label gpu)"]
    lines += [f"  {status:<10} {name}" for name, status in sorted(outcomes.items())]
    return lines


def nccl_lines(tests_log):
    text = read_text(tests_log)
    lines = []
    for world in (2, 3, 4):
        found = re.findall(rf"^nccl_conformance world={world}: (.*)$", text, re.M)
        lines.append(f"nccl_conformance world={world}: " + (found[-1] if found else "not run"))
    for world in (2, 3):
        diffs = [float(x) for x in re.findall(
            rf"^ddp_equivalence nccl world={world} \S+: max_abs_diff=(\S+)$", text, re.M)]
        lines.append(f"ddp_equivalence_nccl world={world}: " +
                     (f"max_abs_diff={max(diffs):.3g}" if diffs else "not run"))
    cases = re.findall(r"^nccl world=\d+ \S+: failed: .*$", text, re.M)
    lines += ["  " + case for case in cases]
    return lines


# The main job's test accuracy on the CPU over seeds, per precision
# (benchmarks/run_main_job_seeds.sh): the range a GPU run should land in.
CPU_SEEDS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "benchmarks", "results", "main_job_cpu_seeds.csv")


def cpu_ranges():
    ranges = {}
    for row in read_csv(CPU_SEEDS):
        low, high = ranges.get(row["precision"], (1.0, 0.0))
        accuracy = float(row["test_accuracy"])
        ranges[row["precision"]] = (min(low, accuracy), max(high, accuracy))
    return ranges


def main_job_lines(build, out):
    """One line per precision from the main job's per-epoch CSVs (its last
    epoch), each beside the CPU's range over seeds where there is one; also
    writes them, merged, to OUT/gpu_main_job_cuda.csv."""
    lines, merged, ranges = [], [], cpu_ranges()
    for precision in PRECISIONS:
        rows = read_csv(os.path.join(build, f"main_job_{precision}.csv"))
        merged += [{"precision": precision, **row} for row in rows]
        if not rows:
            lines.append(f"main_job_cuda precision={precision}: not run")
            continue
        last = rows[-1]
        accuracy = float(last["test_accuracy"])
        lines.append(f"main_job_cuda precision={precision}: "
                     f"test_accuracy={accuracy:.4f} "
                     f"samples_per_s={float(last['samples_per_s']):.1f} "
                     f"peak_device_mb={float(last['peak_device_mb'] or 0):.1f}")
        if precision in ranges:
            low, high = ranges[precision]
            inside = "inside" if low <= accuracy <= high else "OUTSIDE"
            lines.append(f"  {inside} the CPU's range over seeds, {low:.4f}-{high:.4f} "
                         "(benchmarks/results/main_job_cpu_seeds.csv)")
    if merged:
        with open(os.path.join(out, "gpu_main_job_cuda.csv"), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(merged[0]))
            writer.writeheader()
            writer.writerows(merged)
    return lines


# What a step that synced the host says (sdk/src/train/training_step.cpp).
SYNC_ERROR = re.compile(r"the step's (.+?) synchronized the host with the GPU")


def sync_free_lines(steps, bench_log):
    """Whether the main job's steps ran without a host sync (Note [A step
    without host syncs]): passed, or the phase of the first that synced."""
    status = {name: state for name, state, _, _ in steps}.get("main_job_cuda_sync_free")
    if status == "ok":
        return ["main_job_cuda_sync_free: passed"]
    found = SYNC_ERROR.search(read_text(bench_log))
    if found:
        return [f"main_job_cuda_sync_free: failed: {found.group(1)}"]
    return ["main_job_cuda_sync_free: " +
            ("not run" if status in (None, "skipped") else f"failed: the run ended ({status})")]


NCCL_PEER_BYTES = (4096, 1048576, 67108864)


def nccl_peer_lines(build, out):
    """dtrain's NCCL all-reduce against torch.distributed's at world 2 on the
    shared GPU; the rows go to OUT/gpu_allreduce_nccl.csv."""
    rows = (read_csv(os.path.join(build, "allreduce_nccl_dtrain.csv")) +
            read_csv(os.path.join(build, "allreduce_nccl_torch.csv")))
    if rows:
        with open(os.path.join(out, "gpu_allreduce_nccl.csv"), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
            writer.writeheader()
            writer.writerows(rows)
    time = {(r["impl"] == "torch", int(r["bytes"])): float(r["time_us"]) for r in rows}
    lines = []
    for size in NCCL_PEER_BYTES:
        mine, theirs = time.get((False, size)), time.get((True, size))
        lines.append(f"nccl_allreduce_vs_torch world=2 bytes={size}: " +
                     (f"ratio={theirs / mine:.2f}" if mine and theirs else "not run"))
    return lines


def step_lines(build, out):
    """The training step of dtrain's C++ classifier against the same model in
    Python PyTorch on pointnet2_ops-style CUDA ops, per precision (the table
    also shows that Python model on dtrain's ops); also writes the rows to
    OUT/gpu_pointnet2_step.csv."""
    rows = (read_csv(os.path.join(build, "pointnet2_step_dtrain.csv")) +
            read_csv(os.path.join(build, "pointnet2_step_torch.csv")))
    if rows:
        with open(os.path.join(out, "gpu_pointnet2_step.csv"), "w", newline="") as f:
            fields = list(dict.fromkeys(k for row in rows for k in row))
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
    lines = []
    for precision in PRECISIONS:
        mine = [r for r in rows if precision_of(r["impl"]) == precision]
        dtrain = [float(r["step_ms_median"]) for r in mine if r["impl"].startswith("dtrain")]
        torch = [float(r["step_ms_median"]) for r in mine
                 if r["impl"].startswith("torch_python_pointnet2_ops")]
        lines.append(f"pointnet2_step_vs_torch precision={precision}: " +
                     (f"ratio={min(torch) / min(dtrain):.2f}" if dtrain and torch else "not run"))
    body = [[r["impl"], r["preset"], f"{r['batch_size']} x {r['points']}",
             f"{float(r['step_ms_median']):.2f}"] for r in rows]
    if body:
        lines += table(["impl", "preset", "batch x points", "step_ms"], body)
    return lines


def kernel_lines(out):
    rows = read_csv(os.path.join(out, "gpu_pointnet2_ops.csv"))
    goal = {r["impl"]: float(r["median_ms"]) for r in rows
            if r["B"] == "32" and r["op"] == "furthest_point_sample"}
    lines = ["fps_b32_n8192_m1024_ms=" + (f"{goal['dtrain']:.3f}" if "dtrain" in goal
                                           else "not run")]
    lines += [f"  FPS B=32 N=8192 -> 1024, {impl}: {ms:.3f} ms"
              for impl, ms in sorted(goal.items()) if impl != "dtrain"]
    ops = [r for r in rows if r["B"] == "8" and r["impl"] == "dtrain"]
    if ops:
        sizes = sorted({int(r["N"]) for r in ops})
        ms = {(r["op"], int(r["N"])): float(r["median_ms"]) for r in ops}
        names = list(dict.fromkeys(r["op"] for r in ops))
        lines.append(f"PointNet++ ops, dtrain on {ops[0]['device']}: median ms (B=8)")
        lines += table(["op"] + [f"N={n}" for n in sizes],
                       [[op] + [f"{ms[(op, n)]:.3f}" if (op, n) in ms else "-" for n in sizes]
                        for op in names])
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", required=True, help="TSV: step, status, seconds, note")
    parser.add_argument("--out", required=True, help="the run's output folder")
    parser.add_argument("--build", required=True, help="the run's build folder")
    args = parser.parse_args()

    steps = read_steps(args.steps)
    commit, machine = machine_lines(os.path.join(args.out, "gpu_build.log"))
    tests_log = os.path.join(args.out, "gpu_tests.log")
    lines = ["dtrain GPU checks", "", commit, "", "machine:"] + machine
    lines += ["", "steps:"] + table(["step", "status", "s", "note"],
                                    [[n, s, str(t), note] for n, s, t, note in steps])
    lines += [""] + nccl_lines(tests_log)
    lines += [""] + main_job_lines(args.build, args.out)
    lines += sync_free_lines(steps, os.path.join(args.out, "gpu_bench.log"))
    lines += [""] + nccl_peer_lines(args.build, args.out)
    lines += [""] + step_lines(args.build, args.out)
    lines += [""] + kernel_lines(args.out)
    lines += ["", "tests:"] + test_lines(tests_log)
    bad = [n for n, s, _, _ in steps if s not in ("ok", "skipped")]
    lines += ["", "RESULT: " + ("all steps passed" if not bad else "problems in " + ", ".join(bad))]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "gpu_summary.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 3 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
