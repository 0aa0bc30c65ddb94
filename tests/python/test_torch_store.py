"""dtrain::dist::TorchTcpStore against PyTorch's own TCPStore server, on
127.0.0.1 and on ::1 (IPv6; left out, saying so, where this machine has no
::1), then a dtrain program launched by torchrun itself, whose workers meet
in the store torchrun's agent hosts (TORCHELASTIC_USE_AGENT_STORE=True).

Usage: python test_torch_store.py path/to/torch_store_probe path/to/collectives

Exits 1 on any difference, 77 (skipped) without torch.distributed.
"""

import os
import socket
import subprocess
import sys
import time
from datetime import timedelta

try:
    import torch.distributed as dist
except ImportError as error:  # pragma: no cover
    print(f"skipped: {error}")
    sys.exit(77)


def check(failures, name, got, expected):
    if got != expected:
        failures.append(f"{name}: got {got!r}, expected {expected!r}")


def ipv6_loopback_missing():
    """Why ::1 cannot be used here; empty when a TCP socket can bind it."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError as error:
        return f"no ::1 here: {error}"
    return ""


def probe_against_server(probe, host):
    """The probe's calls on a server at host; returns what differed."""
    failures = []
    server = dist.TCPStore(host, 0, None, True, timedelta(seconds=30),
                           wait_for_workers=False)
    server.set("from_python", "written by Python")
    server.set("swap", "old")
    server.set("doomed", "x")
    keys_before = server.num_keys()
    p = subprocess.Popen([probe, host, str(server.port)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        server.wait(["probe_waiting"], timedelta(seconds=30))
    except dist.DistStoreError as error:  # the probe failed before it got there
        p.kill()
        _, err = p.communicate()
        return [f"the probe never set probe_waiting ({error}); its stderr: {err.strip()}"]
    time.sleep(0.3)  # the probe is now waiting for "late"
    server.set("late", "set while C++ waited")
    out, err = p.communicate(timeout=60)
    check(failures, "probe exit", p.returncode, 0)
    if p.returncode != 0:
        failures.append(f"probe stderr: {err.strip()}")
        return failures
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    check(failures, "get", lines.get("get"), "written by Python")
    check(failures, "add", lines.get("add"), "5")
    check(failures, "compare_set_hit", lines.get("compare_set_hit"), "new")
    check(failures, "compare_set_miss", lines.get("compare_set_miss"), "new")
    check(failures, "check_present", lines.get("check_present"), "1")
    check(failures, "check_missing", lines.get("check_missing"), "0")
    check(failures, "delete_present", lines.get("delete_present"), "1")
    check(failures, "delete_missing", lines.get("delete_missing"), "0")
    # doomed deleted; from_cpp and counter added (probe_waiting comes later).
    check(failures, "num_keys", lines.get("num_keys"), str(keys_before + 1))
    for name in ("wait_timeout", "get_timeout"):
        message = lines.get(name, "")
        if "absent" not in message or "200 ms" not in message:
            failures.append(f"{name}: {message!r} does not name the key and the timeout")
    check(failures, "after", lines.get("after"), "written by Python")
    check(failures, "late", lines.get("late"), "set while C++ waited")
    # What the probe wrote, as Python reads it.
    check(failures, "python get from_cpp", server.get("from_cpp"), b"written by C++")
    check(failures, "python add", server.add("counter", 1), 6)
    check(failures, "python get swap", server.get("swap"), b"new")
    return failures


def torchrun_launches_a_dtrain_program(collectives, failures):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", "2", "--no-python", collectives]
    p = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    output = p.stdout + p.stderr
    check(failures, "torchrun exit", p.returncode, 0)
    for line in ("all_reduce: Rank 0 has data 2", "all_reduce: Rank 1 has data 2",
                 "barrier: Rank 1 has passed the barrier"):
        if line not in output:
            failures.append(f"torchrun: no line {line!r} in:\n{output}")


def main():
    probe, collectives = sys.argv[1], sys.argv[2]
    failures = []
    hosts = ["127.0.0.1"]
    why = ipv6_loopback_missing()
    if why:
        print(f"IPv6 part left out: {why}")
    else:
        hosts.append("::1")
    for host in hosts:
        failures += [f"[{host}] {f}" for f in probe_against_server(probe, host)]
    torchrun_launches_a_dtrain_program(collectives, failures)
    for failure in failures:
        print("FAIL", failure)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
