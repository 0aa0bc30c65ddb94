"""Smoke test of one benchmark runner: benchmarks/run_<name>.sh --quick.

Usage: python bench_smoke.py <name> <build dir> <work dir>

Runs the runner with DTRAIN_BUILD_DIR=<build dir> and DTRAIN_RESULTS_DIR=
<work dir> (emptied first; never benchmarks/results), then checks every CSV
it must write there: the header is exactly the expected columns, each
configuration --quick asks for has a row, every row names its commit,
machine and settings, timings and ratios are positive finite numbers
(percentages and fractions within range) and verdicts are verdicts; with
matplotlib importable, the plots exist too. The numbers themselves are not
judged: a smoke run on a shared machine measures little. Flag combinations
a runner's programs must refuse (REFUSALS) are tried too. Exits 1 listing
every problem, 77 (ctest's skip code) when the runner cannot run here (no
MPI, or a peer package that is not installed: the test never installs one).

The expected rows follow each runner's --quick; change both together.
"""

import csv
import importlib.util
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "benchmarks", "report"))
import scaling_model  # noqa: E402  (the columns it writes)
import stats  # noqa: E402  (the columns every report writes)


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
    text: bool = False  # test the text itself, not its number

    def where(self, **only):
        return Rule(self.what, self.test, only, self.text)


POSITIVE = Rule("a positive finite number", lambda v: v is not None and v > 0)
FINITE = Rule("a finite number", lambda v: v is not None)
PERCENT = Rule("a number in [0, 100]", lambda v: v is not None and 0 <= v <= 100)
FRACTION = Rule("a number in [0, 1]", lambda v: v is not None and 0 <= v <= 1)
COMMIT = Rule("a commit (40 hex digits, maybe -dirty)",
              lambda t: re.fullmatch(r"[0-9a-f]{40}(-dirty)?", t or "") is not None, text=True)
TEXT = Rule("a non-empty text", lambda t: bool(t and t.strip()), text=True)
VERDICT = Rule(f"one of {stats.VERDICTS}", lambda t: t in stats.VERDICTS, text=True)
PROVENANCE = {"commit": COMMIT, "machine": TEXT, "settings": TEXT}


@dataclass
class Csv:
    name: str
    columns: list
    key: tuple  # the columns that name a configuration
    rows: list  # the keys (tuples of strings) that must each have a row
    rules: dict  # column -> Rule
    same: dict = field(default_factory=dict)  # column -> the value on every row


def comparisons(name, rows, extras=(), rules=None, same=None):
    """A report of compare.py: stats.COMPARISON_COLUMNS and each extra per side;
    rows: (case, dtrain impl, peer impl)."""
    columns = stats.COMPARISON_COLUMNS + [f"{side}_{x}" for x in extras
                                          for side in ("dtrain", "peer")]
    timed = [c for c in stats.COMPARISON_COLUMNS if c.endswith("_ms") or c.startswith("ratio")]
    return Csv(name, columns, ("case", "dtrain", "peer"), rows,
               {**PROVENANCE, **{c: POSITIVE for c in timed + ["rounds"]}, "verdict": VERDICT,
                **(rules or {})}, same or {})


def rounds(name, rows, extras=(), rules=None, same=None):
    """A rounds CSV of rounds.py: stats.ROUND_COLUMNS and extras; rows: (case, impl, round)."""
    return Csv(name, stats.ROUND_COLUMNS + list(extras), ("case", "impl", "round"), rows,
               {**PROVENANCE, "ms": POSITIVE, **(rules or {})}, same or {})


FORWARD = ["furthest_point_sample", "gather_points", "ball_query", "knn", "group_points",
           "three_nn", "three_interpolate"]
BACKWARD = ["gather_points_backward", "group_points_backward", "three_interpolate_backward"]
OPS = [
    Csv("pointnet2_ops_cpu.csv", stats.PROVENANCE + ["op", "device", "B", "N", "impl", "median_ms"],
        ("op", "N"), [(op, "256") for op in FORWARD + BACKWARD],
        {**PROVENANCE, "median_ms": POSITIVE}, {"device": "cpu", "impl": "dtrain"}),
    comparisons("pointnet2_ops_vs_torch_cpu.csv",
                [(f"{op} B=8 N=256", "dtrain", "torch") for op in FORWARD], ["agreement"],
                {"peer_agreement": FRACTION, "dtrain_agreement": FRACTION}, {"rounds": "1"}),
]

PEER_CASES = [f"{op} B={b} N={n} M={n // 4}" + (f" r={0.2 * (1024 / n) ** (1 / 3):.3g}"
                                                 if op == "ball_query" else "")
              for op in ["furthest_point_sample", "knn", "ball_query", "three_nn"]
              for b, n in [(1, 1024), (2, 512)]]
PEERS = [
    comparisons("point_ops_peers_cpu.csv",
                [(c, "dtrain_1thread", p) for c in PEER_CASES if c.startswith("furthest")
                 for p in ("fpsample_vanilla", "fpsample_bucket")]
                + [(c, "dtrain_1thread", "ckdtree_1worker") for c in PEER_CASES
                   if not c.startswith("furthest")]
                + [(c, "dtrain_all_threads", "ckdtree_all_workers") for c in PEER_CASES
                   if not c.startswith("furthest")],
                ["agreement", "note"], {"peer_agreement": FRACTION}, {"rounds": "1"}),
    rounds("point_ops_peers_cpu_rounds.csv",
           [(c, i, "0") for c in PEER_CASES if c.startswith("furthest")
            for i in ("dtrain_1thread", "fpsample_vanilla", "fpsample_bucket")],
           ["agreement", "note"]),
]


def allreduce(name, peer):
    cases = ["4 KiB", "1 MiB"]
    return [comparisons(name, [(c, "dtrain", peer) for c in cases], ["bytes", "busbw_gbps"],
                        {"dtrain_busbw_gbps": POSITIVE, "peer_busbw_gbps": POSITIVE},
                        {"rounds": "2"}),
            rounds(name.replace(".csv", "_rounds.csv"),
                   [(c, i, r) for c in cases for i in ("dtrain", peer) for r in ("1", "2")],
                   ["bytes", "busbw_gbps"], {"busbw_gbps": POSITIVE})]


AMP = [comparisons("amp_toycnn_cpu.csv",
                   [("batch 16", "dtrain fp32", "torch fp32"),
                    ("batch 16", "dtrain bf16", "torch bf16"),
                    ("batch 16", "dtrain bf16", "dtrain fp32"),
                    ("batch 16", "torch bf16", "torch fp32")], ["peak_rss_mb"],
                   {"dtrain_peak_rss_mb": POSITIVE, "peer_peak_rss_mb": POSITIVE}, {"rounds": "1"})]

DDP_PAIRS = [("dtrain-ddp", "torch-ddp"), ("dtrain-local", "torch-local"),
             ("dtrain-local", "dtrain-ddp"), ("torch-local", "torch-ddp")]
DDP = [
    comparisons("ddp_cpu.csv", [("pointmlp b2 w2", a, b) for a, b in DDP_PAIRS],
                ["backward_ms", "hidden_pct"],
                {"dtrain_backward_ms": POSITIVE, "peer_backward_ms": POSITIVE,
                 "dtrain_hidden_pct": PERCENT.where(dtrain="dtrain-ddp")}, {"rounds": "2"}),
    rounds("ddp_cpu_rounds.csv",
           [("pointmlp b2 w2", f"{i}-{m}", r) for i in ("dtrain", "torch") for m in ("local", "ddp")
            for r in ("0", "1")], ["backward_ms", "hidden_pct", "parameters", "mean_ms"],
           {"backward_ms": POSITIVE, "parameters": POSITIVE, "mean_ms": POSITIVE,
            "hidden_pct": PERCENT.where(impl="dtrain-ddp")}),
]

TRAIN_PEERS = ["torch_python", "torch_python_dtrain", "torch_python_dtrain_channels_last",
               "dtrain_cpp_separate_norm_relu"]
TRAIN = [
    comparisons("pointnet2_train_cpu.csv",
                [("ssg-lite 4x256", "dtrain_cpp", p) for p in TRAIN_PEERS],
                ["peak_rss_mb"], {"dtrain_peak_rss_mb": POSITIVE, "peer_peak_rss_mb": POSITIVE},
                {"rounds": "1"}),
    rounds("pointnet2_train_cpu_rounds.csv",
           [("ssg-lite 4x256", i, "0") for i in ["dtrain_cpp"] + TRAIN_PEERS], ["peak_rss_mb"],
           {"peak_rss_mb": POSITIVE}),
]

CHECKPOINT = [comparisons("checkpoint_cpu.csv",
                          [("ssg-lite", "dtrain background", "torch blocking"),
                           ("ssg-lite", "dtrain blocking", "torch blocking"),
                           ("ssg-lite", "dtrain background", "torch no_flush")], ["file_mb"],
                          {"dtrain_file_mb": POSITIVE, "peer_file_mb": POSITIVE}, {"rounds": "1"})]

CHECKPOINT_STEPS = [comparisons("checkpoint_steps_cpu.csv",
                                [("main job ssg-lite 2 processes", "with --checkpoint", "without")],
                                same={"rounds": "1"})]

SHAPES = ["(8,64,512,32)", "(8,128,512,32)", "(8,128,128,64)", "(8,256,128,64)", "(8,1024,1,128)",
          "(16,32,128,16)", "(16,64,32,32)"]
BNRELU = [comparisons("batch_norm_relu_cpu.csv",
                      [(f"{s} float32", "dtrain_fused", "libtorch_batch_norm_relu")
                       for s in SHAPES],
                      same={"rounds": "2"})]

SCALING = [
    Csv("scaling_model.csv", scaling_model.COLUMNS, ("kind", "model", "ranks", "overlap"),
        [("check", "toycnn", r, o) for r in ("1", "2") for o in ("yes", "no")]
        + [("cluster", "toycnn", g, o) for g in ("2", "8", "512") for o in ("yes", "no")],
        {**PROVENANCE, "compute_ms": POSITIVE, "step_ms": POSITIVE, "gradient_mb": POSITIVE,
         "measured_ms": POSITIVE.where(kind="check"), "error_pct": FINITE.where(kind="check")}),
    Csv("allreduce_fit.csv", scaling_model.FIT_COLUMNS, ("backend",), [("gloo",)],
        {**PROVENANCE, "alpha_us": FINITE, "bus_gbps": POSITIVE}),
]

# name -> (runner, the CSVs it writes, its plots when matplotlib is importable)
RUNNERS = {
    "pointnet2_ops": ("run_pointnet2_ops.sh", OPS, ["pointnet2_ops_vs_torch_cpu.png"]),
    "point_ops_peers": ("run_point_ops_peers.sh", PEERS, ["point_ops_peers_cpu.png"]),
    "allreduce": ("run_allreduce.sh", allreduce("allreduce_gloo.csv", "torch"),
                  ["allreduce_gloo.png"]),
    "allreduce_mpi": ("run_allreduce_mpi.sh", allreduce("allreduce_mpi.csv", "mpi"),
                      ["allreduce_mpi.png"]),
    "amp": ("run_amp.sh", AMP, ["amp_toycnn_cpu.png"]),
    "ddp": ("run_ddp.sh", DDP, ["ddp_cpu.png"]),
    "pointnet2_train": ("run_pointnet2_train.sh", TRAIN, ["pointnet2_train_cpu.png"]),
    "checkpoint": ("run_checkpoint.sh", CHECKPOINT, ["checkpoint_cpu.png"]),
    "checkpoint_steps": ("run_checkpoint_steps.sh", CHECKPOINT_STEPS,
                         ["checkpoint_steps_cpu.png"]),
    "batch_norm_relu": ("run_batch_norm_relu.sh", BNRELU, ["batch_norm_relu_cpu.png"]),
    "scaling": ("run_scaling.sh", SCALING, ["scaling_model.png"]),
}
# Python modules a runner's peers need: where one is missing the test skips
# (the runner would install it; a test must not need the network).
PEER_MODULES = {"point_ops_peers": ["fpsample", "scipy"]}


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
            elif not rule.test(text if rule.text else number(text)):
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
    missing = [m for m in PEER_MODULES.get(name, []) if importlib.util.find_spec(m) is None]
    if missing:
        print(f"skipped: {sys.executable} cannot import {', '.join(missing)} "
              f"(pip install -r {os.path.join(REPO, 'benchmarks', 'requirements-peers.txt')}, "
              f"or run benchmarks/{runner}, which installs them)")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = {**os.environ, "DTRAIN_BUILD_DIR": build, "DTRAIN_RESULTS_DIR": work,
           "DTRAIN_PYTHON": sys.executable, "DTRAIN_BENCH_NO_INSTALL": "1"}
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
