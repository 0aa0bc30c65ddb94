"""Smoke test of one benchmark runner: benchmarks/run_<name>.sh --quick.

Usage: python bench_smoke.py <name> <build dir> <work dir>

Runs the runner with DTRAIN_BUILD_DIR=<build dir> and DTRAIN_RESULTS_DIR=
<work dir> (emptied first; never benchmarks/results), then checks every CSV
it must write there: the header is exactly the expected columns, each
configuration --quick asks for has a row, and timings and ratios are
positive finite numbers (percentages and fractions within range); with
matplotlib importable, the plots exist too. The numbers themselves are not
judged: a smoke run on a shared machine measures little. Flag combinations
a runner's programs must refuse (REFUSALS) are tried too. Exits 1 listing
every problem, 77 (ctest's skip code) when the runner cannot run here.

The expected rows follow each runner's --quick; change both together.
"""

import csv
import importlib.util
import math
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from itertools import product

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def number(text):
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@dataclass
class Rule:
    """What a column's values must be; with `only`, on the rows whose columns
    have those values, and blank on the others."""
    what: str
    test: object
    only: dict = field(default_factory=dict)

    def where(self, **only):
        return Rule(self.what, self.test, only)


POSITIVE = Rule("a positive finite number", lambda v: v is not None and v > 0)
FINITE = Rule("a finite number", lambda v: v is not None)
PERCENT = Rule("a number in [0, 100]", lambda v: v is not None and 0 <= v <= 100)
FRACTION = Rule("a number in [0, 1]", lambda v: v is not None and 0 <= v <= 1)


@dataclass
class Csv:
    name: str
    columns: list
    key: tuple  # the columns that name a configuration
    rows: list  # the keys (tuples of strings) that must each have a row
    rules: dict  # column -> Rule
    same: dict = field(default_factory=dict)  # column -> the value on every row


def ops_csvs():
    forward = ["furthest_point_sample", "gather_points", "ball_query", "knn", "group_points",
               "three_nn", "three_interpolate"]
    backward = ["gather_points_backward", "group_points_backward", "three_interpolate_backward"]
    common = ["op", "device", "B", "N", "impl", "median_ms"]
    return [
        Csv("pointnet2_ops_cpu.csv", common, ("op", "N"),
            [(op, "256") for op in forward + backward],
            {"median_ms": POSITIVE}, {"device": "cpu", "impl": "dtrain"}),
        Csv("pointnet2_ops_vs_torch_cpu.csv", common + ["speedup_vs_torch", "agreement"],
            ("op", "N", "impl"), list(product(forward, ["256"], ["dtrain", "torch"])),
            {"median_ms": POSITIVE, "speedup_vs_torch": POSITIVE.where(impl="dtrain"),
             "agreement": FRACTION}, {"device": "cpu"}),
    ]


def allreduce_csv(name, backend, baseline):
    return Csv(name, ["backend", "impl", "world_size", "bytes", "time_us", "algbw_gbps",
                      "busbw_gbps", "rounds", "time_us_min", "time_us_max", f"ratio_vs_{baseline}"],
               ("impl", "bytes"), list(product(["dtrain", baseline], ["4096", "1048576"])),
               {column: POSITIVE for column in ["time_us", "algbw_gbps", "busbw_gbps",
                                                "time_us_min", "time_us_max",
                                                f"ratio_vs_{baseline}"]},
               {"backend": backend, "world_size": "2", "rounds": "2"})


AMP = Csv("amp_toycnn_cpu.csv",
          ["impl", "device", "precision", "batch_size", "threads", "steps", "step_ms_median",
           "samples_per_s", "peak_rss_mb", "train_rss_growth_mb", "peak_device_mb"],
          ("impl", "precision", "batch_size"),
          list(product(["dtrain", "torch"], ["off", "bf16"], ["16"])),
          {"steps": POSITIVE, "step_ms_median": POSITIVE, "samples_per_s": POSITIVE,
           "peak_rss_mb": POSITIVE, "train_rss_growth_mb": FINITE,
           "peak_device_mb": POSITIVE.where(device="cuda")},
          {"device": "cpu"})

DDP = [
    Csv("ddp_cpu.csv",
        ["model", "batch_per_rank", "world", "rounds", "dtrain_step_ms", "torch_step_ms",
         "dtrain_samples_per_s", "torch_samples_per_s", "speedup_vs_torch", "speedup_q1",
         "speedup_q3", "speedup_of_medians", "dtrain_local_step_ms", "torch_local_step_ms",
         "dtrain_overhead_pct", "torch_overhead_pct", "hidden_pct"],
        ("model", "batch_per_rank", "world"), [("pointmlp", "2", "2")],
        {**{column: POSITIVE for column in [
            "dtrain_step_ms", "torch_step_ms", "dtrain_samples_per_s", "torch_samples_per_s",
            "speedup_vs_torch", "speedup_q1", "speedup_q3", "speedup_of_medians",
            "dtrain_local_step_ms", "torch_local_step_ms"]},
         # Overheads are differences: negative when noise beats the wrapper's cost.
         "dtrain_overhead_pct": FINITE, "torch_overhead_pct": FINITE, "hidden_pct": PERCENT},
        {"rounds": "2"}),
    Csv("ddp_cpu_rounds.csv",
        ["impl", "model", "mode", "world", "batch_per_rank", "parameters", "round", "steps",
         "step_ms_median", "step_ms_p10", "step_ms_p90", "hidden_pct"],
        ("impl", "mode", "world", "round"),
        list(product(["dtrain", "torch"], ["local", "ddp"], ["2"], ["0", "1"])),
        {"parameters": POSITIVE, "step_ms_median": POSITIVE, "step_ms_p10": POSITIVE,
         "step_ms_p90": POSITIVE, "hidden_pct": PERCENT.where(impl="dtrain", mode="ddp")},
        {"model": "pointmlp", "batch_per_rank": "2", "steps": "2"}),
]

TRAIN_IMPLS = ["dtrain_cpp", "dtrain_cpp_separate_norm_relu", "torch_python",
               "torch_python_dtrain", "torch_python_dtrain_channels_last"]
TRAIN = [
    Csv("pointnet2_train_cpu.csv",
        ["preset", "batch_size", "points", "threads", "impl", "rounds", "step_ms", "step_ms_min",
         "step_ms_max", "clouds_per_s", "speedup_vs_torch_python",
         "speedup_vs_torch_python_dtrain_ops", "speedup_vs_torch_python_dtrain_channels_last",
         "speedup_vs_dtrain_separate_norm_relu"],
        ("preset", "impl"), [("ssg-lite", impl) for impl in TRAIN_IMPLS],
        {"step_ms": POSITIVE, "step_ms_min": POSITIVE, "step_ms_max": POSITIVE,
         "clouds_per_s": POSITIVE,
         "speedup_vs_torch_python": POSITIVE.where(impl="dtrain_cpp"),
         "speedup_vs_torch_python_dtrain_ops": POSITIVE.where(impl="dtrain_cpp"),
         "speedup_vs_torch_python_dtrain_channels_last": POSITIVE.where(impl="dtrain_cpp"),
         "speedup_vs_dtrain_separate_norm_relu": POSITIVE.where(impl="dtrain_cpp")},
        {"batch_size": "4", "points": "256", "threads": "1", "rounds": "1"}),
    Csv("pointnet2_train_cpu_rounds.csv",
        ["impl", "preset", "batch_size", "points", "threads", "steps", "step_ms_median",
         "samples_per_s", "peak_rss_mb"],
        ("impl", "preset"), [(impl, "ssg-lite") for impl in TRAIN_IMPLS],
        {"step_ms_median": POSITIVE, "samples_per_s": POSITIVE, "peak_rss_mb": POSITIVE},
        {"batch_size": "4", "points": "256", "threads": "1", "steps": "2"}),
]

CHECKPOINT = Csv("checkpoint_cpu.csv",
                 ["impl", "preset", "parameters", "file_mb", "mode", "repeats", "median_ms"],
                 ("impl", "mode"),
                 [("dtrain", mode) for mode in ["blocking", "background", "on_disk"]]
                 + [("torch", mode) for mode in ["blocking", "no_flush"]],
                 {"parameters": POSITIVE, "file_mb": POSITIVE, "median_ms": POSITIVE},
                 {"preset": "ssg-lite", "repeats": "2"})

# name -> (runner, the CSVs it writes, its plots when matplotlib is importable)
RUNNERS = {
    "pointnet2_ops": ("run_pointnet2_ops.sh", ops_csvs(), ["pointnet2_ops_vs_torch_cpu.png"]),
    "allreduce": ("run_allreduce.sh", [allreduce_csv("allreduce_gloo.csv", "gloo", "torch")],
                  ["allreduce_gloo.png"]),
    "allreduce_mpi": ("run_allreduce_mpi.sh", [allreduce_csv("allreduce_mpi.csv", "mpi", "mpi")],
                      ["allreduce_mpi.png"]),
    "amp": ("run_amp.sh", [AMP], ["amp_toycnn_cpu.png"]),
    "ddp": ("run_ddp.sh", DDP, ["ddp_cpu.png"]),
    "pointnet2_train": ("run_pointnet2_train.sh", TRAIN, ["pointnet2_train_cpu.png"]),
    "checkpoint": ("run_checkpoint.sh", [CHECKPOINT], []),
}


def check_csv(path, spec):
    """Every problem with one CSV, as lines; none when it is well-formed."""
    name = spec.name
    if not os.path.isfile(path):
        return [f"{name}: not written"]
    with open(path, newline="") as f:
        header, *lines = list(csv.reader(f)) or [[]]
    if header != spec.columns:
        return [f"{name}: header is {header},\n  expected {spec.columns}"]
    problems = [f"{name}:{n}: {len(values)} fields, expected {len(header)}"
                for n, values in enumerate(lines, start=2) if len(values) != len(header)]
    if problems:
        return problems
    rows = [dict(zip(header, values)) for values in lines]
    present = {tuple(row[column] for column in spec.key) for row in rows}
    for key in spec.rows:
        if key not in present:
            problems.append(f"{name}: no row for {dict(zip(spec.key, key))}")
    for line, row in enumerate(rows, start=2):
        for column, expected in spec.same.items():
            if row[column] != expected:
                problems.append(f"{name}:{line}: {column} is '{row[column]}', "
                                f"expected '{expected}'")
        for column, rule in spec.rules.items():
            text = row[column]
            if any(row[c] != v for c, v in rule.only.items()):
                if text != "":
                    problems.append(f"{name}:{line}: {column} is '{text}', expected blank")
            elif not rule.test(number(text)):
                problems.append(f"{name}:{line}: {column} is '{text}', expected {rule.what}")
    return problems


# Flag combinations that must be refused as usage errors (exit 2, as a bad
# flag) with a message saying why: runner name -> [(arguments, the message's
# words, whether it applies only where no CUDA device is visible)]. Both the
# dtrain benchmark and its peer are asked, since they share their flags.
REFUSALS = {
    "amp": (["bench_amp_toycnn", "peers/amp_toycnn_torch.py"], [
        (["--device", "cpu", "--precision", "fp16"], "fp16 needs --device cuda", False),
        (["--device", "cuda", "--precision", "bf16"], "no CUDA device is visible", True),
    ]),
}


def refusal_problems(name, build, work):
    """Every refusal of REFUSALS[name] that did not happen as it should."""
    if name not in REFUSALS:
        return []
    programs, cases = REFUSALS[name]
    import torch  # the peers' torch (DTRAIN_PYTHON): what it sees, the benchmark sees
    gpu = torch.cuda.is_available()
    problems = []
    for program in programs:
        if program.endswith(".py"):
            command = [sys.executable, os.path.join(REPO, "benchmarks", program)]
        else:
            command = [os.path.join(build, "benchmarks", program)]
        for args, words, without_gpu in cases:
            if without_gpu and gpu:
                continue
            run = subprocess.run(command + args + ["--csv", os.path.join(work, "refused.csv")],
                                 capture_output=True, text=True, timeout=60)
            shown = f"{os.path.basename(program)} {' '.join(args)}"
            print(f"$ {shown} -> exit {run.returncode}: {run.stderr.strip().splitlines()[-1:]}")
            if run.returncode != 2 or words not in run.stderr:
                problems.append(f"{shown}: exit {run.returncode}, expected 2 with '{words}' "
                                f"on stderr; stderr: {run.stderr.strip()[-300:]!r}")
    return problems


def mpirun_problem():
    """Why mpirun cannot start a process here, or None."""
    mpirun = os.environ.get("MPIRUN", "mpirun")
    if shutil.which(mpirun) is None:
        return f"{mpirun} not found"
    probe = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "1", "true"],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return f"{mpirun} -np 1 true failed: {(probe.stdout + probe.stderr).strip()[-500:]}"
    return None


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in RUNNERS:
        sys.exit(f"usage: bench_smoke.py {{{','.join(RUNNERS)}}} <build dir> <work dir>")
    name, build, work = sys.argv[1:]
    runner, csvs, plots = RUNNERS[name]
    # Set by CMake where the runner cannot work in this build (no MPI backend).
    if reason := os.environ.get("DTRAIN_BENCH_SKIP"):
        print(f"skipped: {reason}")
        return 77
    if name == "allreduce_mpi" and (problem := mpirun_problem()):
        print(f"skipped: {problem}")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = {**os.environ, "DTRAIN_BUILD_DIR": build, "DTRAIN_RESULTS_DIR": work,
           "DTRAIN_PYTHON": sys.executable}
    env.pop("BATCH_SIZES", None)  # run_amp.sh's --quick batch only
    command = ["bash", os.path.join(REPO, "benchmarks", runner), "--quick"]
    print("$", " ".join(command), f"(results in {work})", flush=True)
    status = subprocess.run(command, env=env).returncode
    if status != 0:
        print(f"FAILED: {runner} --quick exited {status}")
        return 1
    problems = [p for spec in csvs for p in check_csv(os.path.join(work, spec.name), spec)]
    problems += refusal_problems(name, build, work)
    if importlib.util.find_spec("matplotlib") is not None:
        for plot in plots:
            path = os.path.join(work, plot)
            if not os.path.isfile(path) or os.path.getsize(path) == 0:
                problems.append(f"{plot}: not written (matplotlib is importable)")
    if problems:
        print(f"FAILED: {runner} --quick wrote {len(problems)} problem(s):")
        print("\n".join("  " + p for p in problems))
        return 1
    print(f"ok: {', '.join(spec.name for spec in csvs)} well-formed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
