"""A PyTorch program under dtrun, as the README promises (`dtrun ... python
main.py`): the seed tutorial's main.py (seed_ddp_main.py) meets through
dist.init_process_group() with what dtrun exported, trains with DDP and
DistributedSampler, and every rank ends with the same weights, having seen
its own share of the samples. Once with --standalone (2 processes), the
script given alone as torchrun takes it (dtrun runs a .py program as
PYTHON_EXEC -u main.py), once as the seed's two-node command line (two
dtrun agents meeting in a c10d rendezvous, 2 processes each).

Usage: python test_dtrun_python.py path/to/dtrun

Exits 1 on any difference, 77 (skipped) without torch.distributed.
"""

import os
import re
import socket
import subprocess
import sys

try:
    import torch.distributed  # noqa: F401
except ImportError as error:  # pragma: no cover
    print(f"skipped: {error}")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "seed_ddp_main.py")
WORKER = [sys.executable, SCRIPT]
LINE = re.compile(r"rank (\d+) of (\d+) local (\d+) group (\d+): params (\S+) samples (\S+)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ranks_of(output):
    """{rank: (world, local, group, checksum, samples)} from the workers' lines."""
    found = {}
    for match in LINE.finditer(output):
        rank, world, local, group = (int(match.group(i)) for i in range(1, 5))
        found[rank] = (world, local, group, match.group(5), match.group(6).split(","))
    return found


def check_job(name, output, world, per_node, failures):
    ranks = ranks_of(output)
    if sorted(ranks) != list(range(world)):
        failures.append(f"{name}: ranks {sorted(ranks)} reported, expected 0..{world - 1}:\n"
                        f"{output}")
        return
    checksums = {ranks[r][3] for r in ranks}
    if len(checksums) != 1:
        failures.append(f"{name}: the ranks ended with different weights: {checksums}")
    for rank, (got_world, local, group, _, samples) in ranks.items():
        if (got_world, local, group) != (world, rank % per_node, rank // per_node):
            failures.append(f"{name}: rank {rank} saw world {got_world}, local rank {local}, "
                            f"group rank {group}")
        # 32 samples, 2 epochs: each rank draws 32 / world per epoch.
        if len(samples) != 2 * 32 // world:
            failures.append(f"{name}: rank {rank} trained on {len(samples)} samples")
    first_epoch = [int(i) for r in ranks for i in ranks[r][4][:32 // world]]
    if sorted(first_epoch) != list(range(32)):
        failures.append(f"{name}: the ranks' first epochs do not split the 32 samples: "
                        f"{sorted(first_epoch)}")


def main():
    dtrun = sys.argv[1]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    failures = []

    # This interpreter, the one with torch, rather than whichever python3 is on PATH.
    standalone = subprocess.run([dtrun, "--standalone", "--nproc-per-node", "2", SCRIPT],
                                capture_output=True, text=True, timeout=180,
                                env=dict(env, PYTHON_EXEC=sys.executable))
    if standalone.returncode != 0:
        failures.append(f"standalone: dtrun exited {standalone.returncode}:\n"
                        f"{standalone.stdout}{standalone.stderr}")
    else:
        check_job("standalone", standalone.stdout, world=2, per_node=2, failures=failures)

    # The seed's torchrun command line, both nodes on this machine.
    endpoint = f"127.0.0.1:{free_port()}"
    common = ["--nnodes=2", "--nproc-per-node=2", "--max-restarts=3", "--rdzv-id=777",
              "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}"]
    nodes = [subprocess.Popen([dtrun] + common + WORKER, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outputs = []
    for node in nodes:
        try:
            out, err = node.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            for other in nodes:
                other.kill()
            out, err = node.communicate()
            failures.append("two nodes: a dtrun agent did not finish in 240 s")
        if node.returncode != 0:
            failures.append(f"two nodes: a dtrun agent exited {node.returncode}:\n{out}{err}")
        outputs.append(out)
    if not failures:
        check_job("two nodes", "".join(outputs), world=4, per_node=2, failures=failures)

    for failure in failures:
        print(failure)
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
