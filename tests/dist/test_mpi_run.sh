#!/bin/sh
# Runs the mpi backend's conformance program under mpirun on this machine:
#   test_mpi_run.sh <mpirun> <number of ranks> <program>
# Ranks talk TCP over loopback (no shared-memory transport, which containers
# often lack), may outnumber the cores, may run as root, and find the store
# at MASTER_ADDR:MASTER_PORT, a random port so parallel runs do not meet.
set -eu
mpirun="$1"
np="$2"
program="$3"
port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
exec "$mpirun" --allow-run-as-root --oversubscribe --bind-to none \
  --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
  -np "$np" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" "$program"
