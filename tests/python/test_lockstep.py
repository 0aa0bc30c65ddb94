"""Lockstep turns (Note [Lockstep benchmarks] in benchmarks/support/lockstep.h)
across the C++ helper and its Python twin, as benchmarks/run_ddp.sh uses them.

Usage: python test_lockstep.py path/to/dtrain_lockstep_probe

Three participants in the order cpp-a, py-b, cpp-c (two C++ probes and one
Python participant in a thread) take 4 rounds with the FIFOs held open the
way benchmarks/common.sh holds them; their log must be the turns in exactly
that order. Then a participant whose turn never comes must fail within its
timeout, naming itself. Exits 1 on any difference.
"""

import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "peers"))
from lockstep import Lockstep  # noqa: E402

ROUNDS = 4
ORDER = ["cpp-a", "py-b", "cpp-c"]


def setup(directory, names):
    with open(os.path.join(directory, "order"), "w") as f:
        f.write("".join(name + "\n" for name in names))
    held = []
    for name in names:
        fifo = os.path.join(directory, f"{name}.0")
        os.mkfifo(fifo)
        held.append(os.open(fifo, os.O_RDWR))  # the runner's hold: no write blocks or is lost
    return held


def main():
    probe = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as directory:
        held = setup(directory, ORDER)
        log = os.path.join(directory, "turns.log")
        probes = [subprocess.Popen([probe, f"{directory}:{name}", str(ROUNDS), log],
                                   stderr=subprocess.PIPE, text=True)
                  for name in ("cpp-a", "cpp-c")]

        def python_participant():
            lockstep = Lockstep(f"{directory}:py-b", 0, timeout_s=60)
            for round_ in range(ROUNDS):
                lockstep.wait_turn(round_)
                with open(log, "a") as f:
                    f.write(f"py-b {round_}\n")
                lockstep.pass_turn(round_)

        thread = threading.Thread(target=python_participant)
        thread.start()
        os.write(held[0], b"0\n")  # the first turn
        for p in probes:
            _, err = p.communicate(timeout=120)
            if p.returncode != 0:
                failures.append(f"probe exited {p.returncode}: {err.strip()}")
        thread.join(timeout=120)
        with open(log) as f:
            turns = f.read().split("\n")[:-1]
        expected = [f"{name} {r}" for r in range(ROUNDS) for name in ORDER]
        if turns != expected:
            failures.append(f"turns {turns}, expected {expected}")
        for fd in held:
            os.close(fd)

    with tempfile.TemporaryDirectory() as directory:
        held = setup(directory, ["first", "waiting"])
        done = subprocess.run([probe, f"{directory}:waiting", "1", os.path.join(directory, "log"),
                               "1"], capture_output=True, text=True, timeout=60)
        if done.returncode != 1 or "'waiting' rank 0 got no turn for round 0" not in done.stderr:
            failures.append(f"a turn that never comes: exit {done.returncode}, {done.stderr!r}")
        for fd in held:
            os.close(fd)

    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print(f"lockstep: {len(ORDER)} participants x {ROUNDS} rounds in order; timeout reported")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
