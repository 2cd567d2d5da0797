#!/bin/sh
# Builds and runs the int8/bf16 linear kernel benchmark (see kernel_bench.cc).
#   bench/kernels/run.sh [build-dir] [extra kernel_bench args, e.g. --quick --isa avx2]
# Runs with OMP_WAIT_POLICY=PASSIVE (as the pagellm binary does) and the machine's
# thread count; report the printed loadavg with the numbers.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
ninja -C "$build" kernel_bench >/dev/null
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} exec "$build/src/backend/kernel_bench" "$@"
