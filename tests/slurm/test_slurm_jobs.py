#!/usr/bin/env python3
"""The repository's sbatch scripts (scripts/slurm), each submitted to the real
cluster slurm_cluster.py brought up, as a user submits them.

    test_slurm_jobs.py CASE STATE_DIR SOURCE_DIR BUILD_DIR WORK_DIR

Each case submits with sbatch, waits for the job to end (a bounded deadline),
and checks its exit code, its output (both ranks trained) and its report CSV.
Exits 77 (skip), saying why in one line, when the cluster is not up.
"""
import csv
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slurm_cluster  # noqa: E402

SKIP = 77
JOB_DEADLINE_S = 240
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
        "BOOT_FAIL", "DEADLINE"}
# train_pointnet2's smallest useful run (tests/support/test_support.cpp small_synthetic_run).
TINY_POINTNET2 = ["--synthetic-classes", "3", "--synthetic-train-per-class", "16",
                  "--synthetic-test-per-class", "8", "--num-points", "256", "--model", "ssg-lite",
                  "--batch-size", "8", "--threads", "1"]
TINY_TOYCNN = ["--train-limit", "256", "--test-limit", "128", "--batch-size", "32",
               "--threads", "1", "--epochs", "1"]


class Cluster:
    def __init__(self, state, source, build, work):
        self.state, self.source, self.build, self.work = state, source, build, work
        self.prefix = slurm_cluster.client_prefix(state)
        self.env = dict(slurm_cluster.client_env(state), DTRAIN_BUILD=str(build))
        for name in [n for n in self.env if n.startswith(("SLURM_", "MASTER_", "PET_"))]:
            if name != "SLURM_CONF":
                del self.env[name]  # nothing exported but the cluster's configuration
        self.nodes = len(state["nodes"])

    def run(self, argv, **kwargs):
        return subprocess.run(self.prefix + argv, capture_output=True, text=True, env=self.env,
                              timeout=60, **kwargs)

    def submit(self, script, name, args=(), sbatch=(), env=None):
        """Submits scripts/slurm/SCRIPT; returns the job id and its run directory."""
        run_dir = self.work / name
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir(parents=True)
        args = [arg.replace("{run}", str(run_dir)) for arg in args]
        argv = ["sbatch", "--parsable", f"--chdir={self.source}",
                f"--output={run_dir}/slurm.out", *sbatch,
                str(self.source / "scripts" / "slurm" / script), *args]
        extra = dict(env or {}, DTRAIN_RUN_DIR=str(run_dir))
        result = subprocess.run(self.prefix + argv, capture_output=True, text=True, timeout=60,
                                env=dict(self.env, **extra))
        if result.returncode != 0:
            raise AssertionError(f"sbatch {script} failed: {result.stderr.strip()}")
        job = result.stdout.strip().split(";")[0]
        print(f"{name}: job {job} ({script} {' '.join(args)})")
        return job, run_dir

    def job_fields(self, job):
        result = self.run(["scontrol", "-o", "show", "job", job])
        return dict(re.findall(r"(\w+)=(\S*)", result.stdout))

    def wait(self, job, until=DONE, deadline_s=JOB_DEADLINE_S):
        deadline = time.monotonic() + deadline_s
        fields = {}
        while time.monotonic() < deadline:
            fields = self.job_fields(job)
            if fields.get("JobState") in until:
                return fields
            time.sleep(0.25)
        self.run(["scancel", job])
        raise AssertionError(f"job {job} did not reach {sorted(until)} within {deadline_s} s: "
                             f"{fields.get('JobState')} ({fields.get('Reason')})")


def output_of(run_dir):
    path = run_dir / "slurm.out"
    return path.read_text(errors="replace") if path.exists() else "(no output)"


def check_completed(fields, run_dir):
    if fields.get("JobState") != "COMPLETED" or fields.get("ExitCode") != "0:0":
        raise AssertionError(f"job {fields.get('JobId')} ended {fields.get('JobState')} "
                             f"exit {fields.get('ExitCode')}:\n{output_of(run_dir)}")


def report_rows(run_dir):
    with open(run_dir / "report.csv") as f:
        return list(csv.DictReader(f))


def check_ranks_trained(run_dir, world, epochs=1):
    """Every rank joined the job and trained (rank 0 reports the whole job), and the report
    has every epoch's row."""
    out = output_of(run_dir)
    for rank in range(world):
        if not re.search(rf"\[rank {rank}/local \d+\] .*process group ready: rank {rank} of "
                         rf"{world}\b", out):
            raise AssertionError(f"rank {rank} of {world} never joined:\n{out}")
    if not re.search(rf"done: .* on {world} process\(es\)", out):
        raise AssertionError(f"the job did not finish on {world} processes:\n{out}")
    rows = report_rows(run_dir)
    if [int(row["epoch"]) for row in rows] != list(range(1, epochs + 1)):
        raise AssertionError(f"report.csv does not hold epochs 1 to {epochs}: {rows}")
    return rows


def case_pointnet2_srun(c):
    """srun -n2 with nothing exported: the master from the node list, the port from the job id."""
    job, run_dir = c.submit("train_pointnet2.sbatch", "pointnet2_srun", TINY_POINTNET2 +
                            ["--epochs", "1", "--data-dir", "{run}/data"])
    check_completed(c.wait(job), run_dir)
    check_ranks_trained(run_dir, 2)


def case_pointnet2_dtrun(c):
    """One dtrun per node (two where the cluster has two), a c10d rendezvous on the first."""
    job, run_dir = c.submit("train_pointnet2_dtrun.sbatch", "pointnet2_dtrun",
                            TINY_POINTNET2 + ["--epochs", "1", "--data-dir", "{run}/data"],
                            sbatch=[f"--nodes={c.nodes}"], env={"DTRAIN_NPROC_PER_NODE": "2"})
    check_completed(c.wait(job), run_dir)
    check_ranks_trained(run_dir, 2 * c.nodes)
    print(f"pointnet2_dtrun: {c.nodes} node(s) x 2 processes trained")


def case_toycnn_srun(c):
    job, run_dir = c.submit("train_toycnn.sbatch", "toycnn_srun", TINY_TOYCNN)
    check_completed(c.wait(job), run_dir)
    check_ranks_trained(run_dir, 2)


def case_toycnn_mpi_pmix(c):
    """The MPI backend under srun --mpi=pmix, without mpirun."""
    job, run_dir = c.submit("train_toycnn.sbatch", "toycnn_mpi_pmix", TINY_TOYCNN,
                            env={"DTRAIN_BACKEND": "mpi", "OMPI_MCA_btl": "self,tcp"})
    check_completed(c.wait(job), run_dir)
    check_ranks_trained(run_dir, 2)


# Long enough that a signal sent once the first checkpoint is on disk (step 5 of 48) arrives
# with most of the run still ahead: about 5 s of training on 2 cores.
REQUEUE_RUN = ["--synthetic-classes", "3", "--synthetic-train-per-class", "64",
               "--synthetic-test-per-class", "8", "--num-points", "512", "--model", "ssg-lite",
               "--batch-size", "8", "--threads", "1", "--epochs", "4", "--data-dir", "{run}/data"]


def case_requeue(c):
    """SIGUSR1 mid-run (as --signal=USR1@90 sends it): the job checkpoints at the step,
    requeues itself, resumes there, and ends as the same job unsignalled does."""
    check_requeue(c, "train_pointnet2.sbatch", "requeue", REQUEUE_RUN)


def case_requeue_dtrun(c):
    """The same with one dtrun per node, which outlives the SIGUSR1 its workers act on.
    Slurm answers the requeue request late here, as on a loaded machine: a rank that ended
    before it was answered would end dtrun's round and so the request with it."""
    check_requeue(c, "train_pointnet2_dtrun.sbatch", "requeue_dtrun",
                  REQUEUE_RUN + ["--checkpoint-steps", "5"], sbatch=[f"--nodes={c.nodes}"],
                  env={"DTRAIN_NPROC_PER_NODE": "1", "PATH": slow_requeue_path(c)})


def slow_requeue_path(c):
    """A PATH whose scontrol takes 3 s longer to requeue a job, then is the real one."""
    real = shutil.which("scontrol", path=c.env.get("PATH"))
    wrapper_dir = c.work / "slow_requeue"
    wrapper_dir.mkdir(parents=True, exist_ok=True)
    wrapper = wrapper_dir / "scontrol"
    wrapper.write_text(f'#!/bin/sh\nif [ "$1" = requeue ]; then sleep 3; fi\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    return f"{wrapper_dir}:{c.env.get('PATH', '')}"


def check_requeue(c, script, name, args, sbatch=(), env=None):
    whole, whole_dir = c.submit(script, f"{name}_unbroken", args, sbatch, env)
    job, run_dir = c.submit(script, f"{name}_signalled", args, sbatch, env)
    checkpoint = run_dir / "checkpoint.pt"
    deadline = time.monotonic() + JOB_DEADLINE_S
    while not checkpoint.exists():
        if c.job_fields(job).get("JobState") in DONE or time.monotonic() > deadline:
            raise AssertionError(f"job {job} wrote no checkpoint:\n{output_of(run_dir)}")
        time.sleep(0.05)
    signalled = c.run(["scancel", "--signal=USR1", job])
    if signalled.returncode != 0:
        raise AssertionError(f"scancel --signal=USR1 {job}: {signalled.stderr.strip()}")
    fields = c.wait(job, until=DONE | {"PENDING"})
    if fields.get("Restarts") != "1":
        raise AssertionError(f"job {job} was not requeued ({fields.get('JobState')}, "
                             f"{fields.get('Restarts')} restarts):\n{output_of(run_dir)}")
    # Slurm holds a requeued job back (BeginTime, about 2 minutes); a user waits, the test need not.
    c.run(["scontrol", "update", f"JobId={job}", "StartTime=now"])
    check_completed(c.wait(job), run_dir)
    check_completed(c.wait(whole), whole_dir)
    out = output_of(run_dir)
    # The ranks agree on a stop every few steps and at the epoch's end (Note [Agreeing on a
    # stop]): a signal that arrives late in an epoch stops the job at its end.
    point = r"(step \d+ of epoch \d+|epoch \d+)"
    stop = re.search(r"stopped by signal 10 after " + point + r": .* requeueing the "
                     r"Slurm job \(SLURM_JOB_ID=\d+, SLURM_RESTART_COUNT=0\)", out)
    resumed = re.search(r"SLURM_RESTART_COUNT=1\) resumed from .* after " + point, out)
    if not stop or not resumed or stop.groups() != resumed.groups():
        raise AssertionError(f"no stop and resume at the same step:\n{out}")
    ends = [report_rows(d)[-1] for d in (run_dir, whole_dir)]
    for column in ("test_accuracy", "test_loss"):
        if ends[0][column] != ends[1][column]:
            raise AssertionError(f"the requeued job ends with {column} {ends[0][column]}, the "
                                 f"unbroken one with {ends[1][column]}")
    print(f"{name}: stopped and resumed after {stop[1]}; final test "
          f"accuracy {ends[0]['test_accuracy']} in both")


def expect_one_line(result, text, what):
    lines = [line for line in (result.stdout + result.stderr).splitlines() if "error" in line]
    if result.returncode == 0 or not any(text in line for line in lines):
        raise AssertionError(f"{what}: expected a failure saying \"{text}\", got exit "
                             f"{result.returncode}:\n{result.stdout}{result.stderr}")
    print(f"{what}: {next(line for line in lines if text in line)}")


def case_bad_setups(c):
    """Each ends in one line naming what to change."""
    dtrun = str(c.build / "apps" / "dtrun" / "dtrun")
    toycnn = str(c.build / "apps" / "train_toycnn" / "train_toycnn")
    # Two dtruns on one node: srun's task count disagrees with dtrun's --nproc-per-node.
    expect_one_line(c.run(["srun", "--nodes=1", "--ntasks=2", dtrun, "--nproc-per-node", "1",
                           "--standalone", "true"]),
                    "this srun step has 2 tasks on 1 node(s)", "two dtruns on a node")
    # A first node that cannot be reached: rank 1 of a job whose node list names a host
    # that does not resolve (run here, with the variables srun would set).
    env = dict(c.env, SLURM_JOB_ID="4242", SLURM_JOB_NODELIST="no-such-node[1-2]",
               SLURM_PROCID="1", SLURM_NTASKS="2", SLURM_LOCALID="0")
    result = subprocess.run([toycnn, *TINY_TOYCNN, "--dist-timeout", "5"], env=env,
                            capture_output=True, text=True, timeout=120)
    expect_one_line(result, "from the first node of SLURM_JOB_NODELIST=no-such-node[1-2]",
                    "unreachable first node")
    # A checkpoint of another model where a requeued job resumes.
    work = c.work / "bad_setups"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    pointnet2 = str(c.build / "apps" / "train_pointnet2" / "train_pointnet2")
    alone = dict(c.env, SLURM_JOB_ID="4243", SLURM_RESTART_COUNT="1")
    subprocess.run([pointnet2, *TINY_POINTNET2, "--epochs", "1", "--data-dir", str(work / "data"),
                    "--csv", str(work / "p.csv"), "--checkpoint", str(work / "ckpt.pt")],
                   env=dict(c.env), check=True, capture_output=True, timeout=120)
    result = subprocess.run([toycnn, *TINY_TOYCNN, "--csv", str(work / "t.csv"),
                             "--checkpoint", str(work / "ckpt.pt")], env=alone,
                            capture_output=True, text=True, timeout=120)
    expect_one_line(result, "--checkpoint implies --resume: give this job a --checkpoint path of "
                    "its own", "another model's checkpoint")


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    name, state_dir, source, build, work = sys.argv[1:]
    case = globals().get(f"case_{name}")
    if case is None:
        print(f"no case '{name}'")
        return 2
    state = slurm_cluster.load_state(state_dir)
    if state is None:
        print(f"SKIP: no Slurm cluster in {state_dir} (slurm.cluster_up skipped or failed; "
              "its output says why)")
        return SKIP
    started = time.monotonic()
    case(Cluster(state, Path(source), Path(build), Path(work)))
    print(f"{name}: passed in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
