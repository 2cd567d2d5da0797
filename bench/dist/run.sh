#!/bin/sh
# Builds and runs the shared-memory all-reduce benchmark (see allreduce_bench.cc).
#   bench/dist/run.sh [build-dir] [allreduce_bench args, e.g. --ranks 2 --sizes 8192,65536]
# State the CPU (lscpu) and the load average with the numbers.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
ninja -C "$build" allreduce_bench >/dev/null
uptime
exec "$build/src/dist/allreduce_bench" "$@"
