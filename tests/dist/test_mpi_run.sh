#!/bin/sh
# Runs a test program under mpirun on this machine:
#   test_mpi_run.sh <mpirun> <number of ranks> <store> <program> [arguments]
# Ranks talk TCP over loopback (no shared-memory transport, which containers
# often lack), may outnumber the cores and may run as root. <store> says how
# they find the store:
#   port  MASTER_ADDR=127.0.0.1 and a MASTER_PORT chosen here
#   mpi   neither: rank 0 hosts the store on a free port and shares it
#         through MPI (Note [The store's address through MPI])
#   addr  MASTER_ADDR=127.0.0.1 only; the port is shared through MPI
#   mpi-apart, addr-apart
#         as mpi and addr, with the last rank in a UTS namespace of its own
#         under another host name, so the job looks as if on two hosts
#         (skipped, exit 77, where unshare is not permitted)
#
# The port of `port` is random, so parallel runs do not meet, and below the
# kernel's ephemeral range: mpirun's own sockets and every outgoing
# connection on the machine take ports from that range, and one of them
# holding ours made the store fail to listen. A port some other server took
# in the meantime is still possible, so a run whose store could not listen
# is tried again on another port.
set -eu
mpirun="$1"
np="$2"
store="$3"
shift 3

run() {
  env -u MASTER_ADDR -u MASTER_PORT "$mpirun" --allow-run-as-root --oversubscribe \
    --bind-to none --mca btl self,tcp --mca btl_tcp_if_include lo \
    --mca oob_tcp_if_include lo "$@"
}

# run_apart [mpirun flags] -- <program> [arguments]: the last rank on "another host".
run_apart() {
  if ! unshare --uts true 2>/dev/null; then
    echo "test_mpi_run.sh: skipped: unshare --uts is not permitted here" >&2
    exit 77
  fi
  flags=""
  while [ "$1" != "--" ]; do flags="$flags $1"; shift; done
  shift
  # shellcheck disable=SC2086 # the flags are words
  run $flags -np $((np - 1)) "$@" : $flags -np 1 \
    unshare --uts sh -c 'hostname dtrain-apart-host && exec "$@"' apart "$@"
}

case "$store" in
  mpi) run -np "$np" "$@"; exit ;;
  addr) run -np "$np" -x MASTER_ADDR=127.0.0.1 "$@"; exit ;;
  mpi-apart)
    # Rank 0 dials its host name where it resolves beyond loopback: then the
    # job runs, and an error expected for a loopback name is not.
    if getent ahosts "$(hostname)" 2>/dev/null | awk '{print $1}' | grep -qv '^127\.\|^::1$'; then
      echo "test_mpi_run.sh: $(hostname) resolves beyond loopback: expecting the job to run" >&2
      program="$1" backend="$2"
      set -- "$program" "$backend"
    fi
    run_apart -- "$@"
    exit
    ;;
  addr-apart) run_apart -x MASTER_ADDR=127.0.0.1 -- "$@"; exit ;;
  port) ;;
  *) echo "test_mpi_run.sh: <store> must be port, mpi, addr, mpi-apart or addr-apart, not '$store'" >&2; exit 2 ;;
esac

ephemeral_start=32768
if [ -r /proc/sys/net/ipv4/ip_local_port_range ]; then
  ephemeral_start=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range | tr -d ' ')
fi
low=10000
[ "$ephemeral_start" -gt $((low + 1000)) ] || low=1024

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for attempt in 1 2 3; do
  random=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
  port=$((low + random % (ephemeral_start - low)))
  status=0
  run -np "$np" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" "$@" >"$log" 2>&1 || status=$?
  cat "$log"
  if [ "$status" -eq 0 ] || ! grep -q "cannot listen on .*:$port: Address already in use" "$log"; then
    exit "$status"
  fi
  echo "test_mpi_run.sh: port $port was taken (attempt $attempt of 3); trying another" >&2
done
exit "$status"
