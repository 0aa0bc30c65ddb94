#!/usr/bin/env python3
"""A real Slurm cluster on this machine for the slurm tests, up and down.

    slurm_cluster.py up STATE_DIR [--one-node]
                                      munged, slurmctld and the slurmds; waits until every node
                                      is idle; writes STATE_DIR/cluster.json; exits 77 (skip),
                                      saying why in one line, where Slurm cannot run here
    slurm_cluster.py down STATE_DIR  stops every daemon `up` started and removes its namespaces

Two nodes, each a slurmd in its own network namespace joined by a veth pair
(10.78.0.1, 10.78.0.2; slurmctld beside the first; the node names resolve
through a hosts file of the cluster's own), where this machine lets
root make namespaces; else one node on loopback. PID 1 need not be systemd:
the daemons are started directly, each with its files in STATE_DIR.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

SKIP = 77
DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
CLIENTS = ("sbatch", "srun", "sinfo", "squeue", "scontrol", "scancel")
SUBNET = "10.78.0"
# Enough CPUs per node (SlurmdParameters=config_overrides) for 4 one-CPU tasks on a 2-core machine.
CPUS_PER_NODE = 4


def run(argv, check=True, **kwargs):
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kwargs)


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def missing_tools():
    missing = [path for path in DAEMONS if not os.access(path, os.X_OK)]
    missing += [name for name in CLIENTS if shutil.which(name) is None]
    return missing


def node_shape():
    """Sockets and cores as `slurmd -C` prints them for this machine."""
    fields = dict(part.split("=", 1) for part in run(["/usr/sbin/slurmd", "-C"]).stdout.split()
                  if "=" in part)
    sockets = int(fields.get("SocketsPerBoard", "1")) * int(fields.get("Boards", "1"))
    return sockets, int(fields.get("CoresPerSocket", "1")), int(fields.get("ThreadsPerCore", "1"))


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def make_namespaces(state):
    """Two namespaces joined by a veth pair, each with /etc/netns/<ns>/hosts naming both nodes
    (ip netns exec mounts it over /etc/hosts). Returns the reason when it cannot."""
    ip = shutil.which("ip") or "/usr/sbin/ip"
    if os.geteuid() != 0:
        return "network namespaces need root"
    if not os.access(ip, os.X_OK):
        return "iproute2's ip is not installed"
    tag = str(os.getpid())
    nodes = [{"name": f"dtslurm{i}", "netns": f"dtslurm{tag}{'ab'[i - 1]}",
              "veth": f"dts{tag}{'ab'[i - 1]}", "addr": f"{SUBNET}.{i}"} for i in (1, 2)]
    state.update(nodes=nodes, ip=ip)
    write_state(state)  # `down` deletes what exists of them, whatever fails below
    a, b = nodes
    steps = [[ip, "netns", "add", a["netns"]], [ip, "netns", "add", b["netns"]],
             [ip, "link", "add", a["veth"], "type", "veth", "peer", "name", b["veth"]]]
    for node in nodes:
        steps += [[ip, "link", "set", node["veth"], "netns", node["netns"]],
                  [ip, "-n", node["netns"], "addr", "add", node["addr"] + "/24", "dev", node["veth"]],
                  [ip, "-n", node["netns"], "link", "set", node["veth"], "up"],
                  [ip, "-n", node["netns"], "link", "set", "lo", "up"]]
    for step in steps:
        result = run(step, check=False)
        if result.returncode != 0:
            return f"`{' '.join(step)}` failed: {result.stderr.strip()}"
    state["hosts"] = str(Path(state["dir"], "hosts"))
    Path(state["hosts"]).write_text("127.0.0.1 localhost\n" +
                                    "".join(f"{n['addr']} {n['name']}\n" for n in nodes))
    return None


def in_node(state, node):
    """The prefix that runs a command on `node`: in its network namespace, with the nodes' hosts
    file over /etc/hosts in a mount namespace of its own. (Not `ip netns exec`: that mounts a
    fresh /sys, without the cgroup file systems slurmd reads.)"""
    if not node.get("netns"):
        return []
    return ["nsenter", f"--net=/var/run/netns/{node['netns']}", "unshare", "--mount", "sh", "-c",
            'mount --bind "$0" /etc/hosts && exec "$@"', state["hosts"]]


def client_prefix(state):
    """Client commands (sbatch, squeue, ...) run beside slurmctld, on the first node."""
    return in_node(state, state["nodes"][0])


def slurm_conf(state):
    d = state["dir"]
    sockets, cores, threads = node_shape()
    first = state["nodes"][0]
    lines = [
        "ClusterName=dtrain",
        # The controller's name is the machine's: namespaces share it.
        f"SlurmctldHost={socket.gethostname().split('.')[0]}({first['addr']})",
        "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={d}/munge.socket",
        f"SlurmctldPort={state['ports'][0]}", f"SlurmdPort={state['ports'][1]}",
        f"StateSaveLocation={d}/ctld", f"SlurmdSpoolDir={d}/spool-%n",
        f"SlurmctldPidFile={d}/slurmctld.pid", f"SlurmdPidFile={d}/slurmd-%n.pid",
        f"SlurmctldLogFile={d}/slurmctld.log", f"SlurmdLogFile={d}/slurmd-%n.log",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none", "MpiDefault=none", "ReturnToService=2",
        "SlurmdParameters=config_overrides", "SchedulerType=sched/builtin",
        "SchedulerParameters=sched_interval=1", "KillWait=5", "MinJobAge=300",
        "SlurmctldTimeout=30", "SlurmdTimeout=60", "InactiveLimit=0",
    ]
    # The machine's sockets and cores, with as many threads per core as make CPUS_PER_NODE
    # (CR_CPU schedules threads): the node's shape stays the one slurmd detects.
    threads = max(threads, -(-CPUS_PER_NODE // (sockets * cores)))
    for node in state["nodes"]:
        lines.append(f"NodeName={node['name']} NodeAddr={node['addr']} NodeHostname={node['name']} "
                     f"CPUs={sockets * cores * threads} Sockets={sockets} CoresPerSocket={cores} "
                     f"ThreadsPerCore={threads} State=UNKNOWN")
    lines.append("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def start_daemons(state):
    d = Path(state["dir"])
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    run(["/usr/sbin/munged", f"--socket={d}/munge.socket", f"--key-file={key}",
         f"--pid-file={d}/munged.pid", f"--log-file={d}/munged.log", f"--seed-file={d}/munge.seed",
         "--force"], stdin=subprocess.DEVNULL)
    env = dict(os.environ, SLURM_CONF=state["conf"])
    (d / "ctld").mkdir(exist_ok=True)
    for node in state["nodes"]:
        (d / f"spool-{node['name']}").mkdir(exist_ok=True)
    # Each daemon forks into the background itself once it has read its configuration.
    run(client_prefix(state) + ["/usr/sbin/slurmctld", "-c", "-f", state["conf"]], env=env,
        stdin=subprocess.DEVNULL)
    for node in state["nodes"]:
        run(in_node(state, node) + ["/usr/sbin/slurmd", "-f", state["conf"], "-N", node["name"]],
            env=env, stdin=subprocess.DEVNULL)


def client_env(state):
    return dict(os.environ, SLURM_CONF=state["conf"])


def wait_idle(state, deadline_s=60):
    """Until sinfo shows every node idle; raises with the daemons' last log lines if not."""
    names = {node["name"] for node in state["nodes"]}
    deadline = time.monotonic() + deadline_s
    last = ""
    while time.monotonic() < deadline:
        result = run(client_prefix(state) + ["sinfo", "-h", "-N", "-o", "%N %t"], check=False,
                     env=client_env(state))
        last = (result.stdout + result.stderr).strip()
        idle = {line.split()[0] for line in result.stdout.splitlines() if line.endswith(" idle")}
        if idle >= names:
            return
        time.sleep(0.2)
    logs = "".join(f"\n--- {p.name}\n" + "".join(p.read_text().splitlines(True)[-15:])
                   for p in sorted(Path(state["dir"]).glob("*.log")))
    raise RuntimeError(f"the nodes were not idle within {deadline_s} s; sinfo: {last}{logs}")


def up(state_dir, one_node=False):
    missing = missing_tools()
    if missing:
        skip(f"Slurm is not installed ({', '.join(missing)} missing; scripts/bootstrap.sh "
             "installs slurm-wlm and munge)")
    if os.geteuid() != 0:
        skip("this single-host cluster runs its daemons as root (SlurmUser=root); not root here")
    down(state_dir, quiet=True)
    state_dir.mkdir(parents=True, exist_ok=True)
    state = {"dir": str(state_dir), "conf": str(state_dir / "slurm.conf"), "ports": free_ports(2)}
    write_state(state)
    why_one_node = "asked for one node" if one_node else make_namespaces(state)
    if why_one_node:
        host = socket.gethostname().split(".")[0]
        state["nodes"] = [{"name": host, "addr": "127.0.0.1"}]
        state["one_node_because"] = why_one_node
    write_state(state)  # before anything starts, so that `down` finds what to stop
    Path(state["conf"]).write_text(slurm_conf(state))
    try:
        start_daemons(state)
        wait_idle(state)
    except (subprocess.CalledProcessError, RuntimeError) as error:
        detail = error.stderr.strip() if isinstance(error, subprocess.CalledProcessError) else error
        down(state_dir, quiet=True)
        print(f"the Slurm cluster did not come up: {detail}")
        sys.exit(1)
    names = ", ".join(node["name"] for node in state["nodes"])
    note = f" (one node: {why_one_node})" if why_one_node else ""
    print(f"Slurm cluster up: {len(state['nodes'])} node(s) {names}{note}")


def write_state(state):
    Path(state["dir"], "cluster.json").write_text(json.dumps(state, indent=1))


def load_state(state_dir):
    path = Path(state_dir) / "cluster.json"
    return json.loads(path.read_text()) if path.exists() else None


def stop_pid_file(path):
    try:
        pid = int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return None
    return pid


def down(state_dir, quiet=False):
    state = load_state(state_dir)
    if state is None:
        return
    d = Path(state["dir"])
    if (d / "slurm.conf").exists():
        # Jobs first, so that no step outlives its slurmd.
        env = client_env(state)
        run(client_prefix(state) + ["scancel", "--full", "--quiet", "--user", "root"],
            check=False, env=env, timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            left = run(client_prefix(state) + ["squeue", "-h", "-o", "%i"], check=False, env=env,
                       timeout=30)
            if left.returncode != 0 or not left.stdout.strip():
                break
            time.sleep(0.2)
    pids = [stop_pid_file(p) for p in sorted(d.glob("slurmd-*.pid"))]
    pids += [stop_pid_file(d / "slurmctld.pid"), stop_pid_file(d / "munged.pid")]
    deadline = time.monotonic() + 20
    for pid in filter(None, pids):
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            time.sleep(0.1)
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)
    for node in state.get("nodes", []):
        if node.get("netns") and Path("/var/run/netns", node["netns"]).exists():
            run([state["ip"], "netns", "del", node["netns"]], check=False)
    (d / "cluster.json").unlink(missing_ok=True)
    if not quiet:
        print("Slurm cluster down")


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in ("up", "down"):
        print(__doc__)
        return 2
    state_dir = Path(sys.argv[2]).resolve()
    if sys.argv[1] == "up":
        up(state_dir, one_node=sys.argv[3:] == ["--one-node"])
    else:
        down(state_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
