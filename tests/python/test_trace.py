"""What --trace writes for a two-process train_pointnet2 job under dtrun,
loaded as Chrome trace JSON: each rank's recorded steps, with data,
forward, backward and optimizer in order inside each step, backward's
compute and all-reduce wait inside backward, every bucket's all-reduce
inside its step, and at least one all-reduce launched while backward's
compute had a tenth or more still to run (the communication DDP hides).
A --trace path that cannot be written stops a run in one line naming it. --trace-steps 2 of the 3 steps of
each of the 2 epochs are recorded.

Usage: python test_trace.py path/to/dtrun path/to/train_pointnet2

Exits 1 on any difference.
"""

import json
import os
import subprocess
import sys
import tempfile

EPOCHS, RECORDED = 2, 2
PHASES = ["data", "forward", "backward", "optimizer"]
SLACK_US = 0.01  # the trace's times are rounded to nanoseconds


def small_run(app, work, trace):
    return [app, "--data-dir", os.path.join(work, "shapes"), "--synthetic-classes", "3",
            "--synthetic-train-per-class", "16", "--synthetic-test-per-class", "8",
            "--num-points", "256", "--model", "ssg-lite", "--batch-size", "8",
            "--threads", "1", "--csv", os.path.join(work, "report.csv"),
            "--epochs", str(EPOCHS), "--trace", trace, "--trace-steps", str(RECORDED)]


def run(dtrun, app, work):
    trace = os.path.join(work, "out", "trace.json")
    command = [dtrun, "--standalone", "--nproc-per-node", "2", *small_run(app, work, trace)]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=240, check=False)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}")
    with open(trace) as f:
        return json.load(f)["traceEvents"]


def inside(inner, outer):
    return (inner["ts"] >= outer["ts"] - SLACK_US
            and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + SLACK_US)


def check_step(step, spans, failures):
    """`spans`: the step's spans by name; checks their nesting and order."""
    where = f"rank {step['pid']} epoch {step['args']['epoch']} step {step['args']['step']}"
    missing = [name for name in PHASES + ["compute", "all-reduce wait"] if name not in spans]
    if missing:
        failures.append(f"{where}: no span {missing}")
        return
    phases = [spans[name] for name in PHASES]
    for phase in phases:
        if not inside(phase, step):
            failures.append(f"{where}: {phase['name']} is not inside its step")
    for before, after in zip(phases, phases[1:]):
        if before["ts"] + before["dur"] > after["ts"] + SLACK_US:
            failures.append(f"{where}: {before['name']} runs into {after['name']}")
    for name in ("compute", "all-reduce wait"):
        if not inside(spans[name], spans["backward"]):
            failures.append(f"{where}: {name} is not inside backward")


def check(events, failures):
    spans = [e for e in events if e.get("ph") == "X"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    if sorted(set(names.values())) != ["all-reduce", "training"]:
        failures.append(f"thread names {names}")
    steps = [e for e in spans if e["name"] == "step"]
    if sorted({(e["pid"], e["args"]["epoch"], e["args"]["step"]) for e in steps}) != sorted(
            (rank, epoch, step) for rank in (0, 1) for epoch in range(1, EPOCHS + 1)
            for step in range(1, RECORDED + 1)) or len(steps) != 2 * EPOCHS * RECORDED:
        failures.append(f"recorded steps: {[(e['pid'], e['args']) for e in steps]}")
    overlapping = 0
    for step in steps:
        key = (step["pid"], step["args"]["epoch"], step["args"]["step"])
        mine = [e for e in spans if (e["pid"], e["args"]["epoch"], e["args"]["step"]) == key]
        by_name = {e["name"]: e for e in mine if e["tid"] == 0 and e["name"] != "step"}
        check_step(step, by_name, failures)
        buckets = [e for e in mine if e["name"].startswith("all-reduce bucket")]
        if not buckets or any(e["tid"] != 1 for e in buckets):
            failures.append(f"step {key}: bucket spans {buckets}")
        for bucket in buckets:
            if not inside(bucket, step):
                failures.append(f"step {key}: {bucket['name']} is not inside its step")
            # Launched with a tenth of backward's compute still to run: the
            # bucket of the head's gradients, ready first, not the last one
            # (launched by the last gradient, as backward ends).
            compute = by_name.get("compute")
            if compute and compute["ts"] + compute["dur"] - bucket["ts"] >= 0.1 * compute["dur"]:
                overlapping += 1
    if overlapping == 0:
        failures.append("no all-reduce overlaps backward's compute")
    return overlapping


def check_bad_path(app, work, failures):
    """A trace that cannot be written stops the run in one line naming it."""
    blocker = os.path.join(work, "a-file")
    with open(blocker, "w") as f:
        f.write("in the way")
    trace = os.path.join(blocker, "trace.json")
    result = subprocess.run(small_run(app, work, trace), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=240, check=False)
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    if result.returncode != 1 or f"cannot write the trace '{trace}'" not in last:
        failures.append(f"an unwritable --trace: exit {result.returncode}, last line '{last}'")


def main():
    dtrun, app = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory() as work:
        overlapping = check(run(dtrun, app, work), failures)
        check_bad_path(app, work, failures)
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        sys.exit(1)
    print(f"ok: the spans nest, and {overlapping} all-reduce(s) overlap backward's compute")


if __name__ == "__main__":
    main()
