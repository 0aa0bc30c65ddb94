"""What --tensorboard writes, read back by tensorboard's own reader
(EventAccumulator): a two-process train_pointnet2 run under dtrun trains
epoch 1 with a checkpoint, a second run resumes it for epoch 2 into the same
directory. Only rank 0 writes (one event file a run); every epoch/<column>
scalar equals the CSV report's cell (within float32 and the CSV's six
digits); each step scalar has one value per step, at the steps 1..6 of the
two epochs (3 global batches each), rising across the resume.

Usage: python test_tensorboard.py path/to/dtrun path/to/train_pointnet2

Exits 1 on any difference, 77 (skipped) without the tensorboard package.
"""

import csv
import glob
import math
import os
import subprocess
import sys
import tempfile

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
except ImportError as error:  # pragma: no cover
    print(f"skipped: the tensorboard package is not importable ({error}); "
          "scripts/bootstrap.sh installs it")
    sys.exit(77)

STEPS_PER_EPOCH = 3  # 48 clouds, 2 processes of batch 8
STEP_TAGS = ("train/loss", "train/lr", "train/samples_per_s")


def run(dtrun, app, work, epochs, more=()):
    command = [dtrun, "--standalone", "--nproc-per-node", "2", app,
               "--data-dir", os.path.join(work, "shapes"), "--synthetic-classes", "3",
               "--synthetic-train-per-class", "16", "--synthetic-test-per-class", "8",
               "--num-points", "256", "--model", "ssg-lite", "--batch-size", "8",
               "--threads", "1", "--csv", os.path.join(work, "report.csv"),
               "--checkpoint", os.path.join(work, "run.pt"), "--resume",
               "--tensorboard", os.path.join(work, "tb"), "--epochs", str(epochs), *more]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=240, check=False)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}")


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)


def check(work, failures):
    files = sorted(glob.glob(os.path.join(work, "tb", "events.out.tfevents.*")))
    if len(files) != 2:
        failures.append(f"expected one event file per run (rank 0's), found {files}")
    events = EventAccumulator(os.path.join(work, "tb"), size_guidance={"scalars": 0})
    events.Reload()
    tags = set(events.Tags()["scalars"])
    with open(os.path.join(work, "report.csv"), newline="") as report:
        rows = list(csv.DictReader(report))
    if [row["epoch"] for row in rows] != ["1", "2"]:
        failures.append(f"the report's epochs: {[row['epoch'] for row in rows]}")
    for column in rows[0]:
        if column == "epoch":
            continue
        tag = "epoch/" + column
        if tag not in tags:
            failures.append(f"no scalar {tag} (tags: {sorted(tags)})")
            continue
        got = {e.step: e.value for e in events.Scalars(tag)}
        want = {int(row["epoch"]): float(row[column]) for row in rows}
        if sorted(got) != sorted(want) or not all(close(got[s], want[s]) for s in want):
            failures.append(f"{tag}: {got} in TensorBoard, {want} in the report")
    for tag in STEP_TAGS:
        steps = [e.step for e in events.Scalars(tag)] if tag in tags else []
        if steps != list(range(1, 2 * STEPS_PER_EPOCH + 1)):
            failures.append(f"{tag} at steps {steps}, expected 1..{2 * STEPS_PER_EPOCH}")
    if "train/loss_scale" in tags:
        failures.append("train/loss_scale written by a run without a loss scaler")
    losses = [e.value for e in events.Scalars("train/loss")] if "train/loss" in tags else []
    if not all(math.isfinite(v) and v > 0 for v in losses):
        failures.append(f"train/loss values {losses}")


def main():
    dtrun, app = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory() as work:
        run(dtrun, app, work, epochs=1)
        run(dtrun, app, work, epochs=2)
        check(work, failures)
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        sys.exit(1)
    print("ok: TensorBoard's reader sees the report's numbers and every step")


if __name__ == "__main__":
    main()
