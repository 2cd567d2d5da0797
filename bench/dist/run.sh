#!/bin/sh
# Builds and runs the all-reduce benchmark (see allreduce_bench.cc): the shared-memory
# communicator, then the Open MPI one (mpirun on this host, 2 ranks by default).
#   bench/dist/run.sh [build-dir] [allreduce_bench args, e.g. --ranks 2 --sizes 8192,65536]
# State the CPU (lscpu) and the load average with the numbers.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
ninja -C "$build" allreduce_bench >/dev/null
ranks=2
prev=""
for arg in "$@"; do
  [ "$prev" = "--ranks" ] && ranks=$arg
  prev=$arg
done
uptime
lscpu | grep -E '^Model name' || true
"$build/src/dist/allreduce_bench" "$@"
# --ranks is the shm side's; mpirun sets the MPI world size. Open MPI binds one core per
# rank by default (np <= 2); --oversubscribe lets --ranks exceed the cores.
mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$build/src/dist/allreduce_bench" --comm mpi "$@"
