#!/bin/sh
# CPU benchmark, pagellm vs llama.cpp on dummy Qwen3-0.6B weights (see run.py for the cases).
#   bench/cpu/run.sh [build-dir] [run.py args, e.g. --quick | --runs 3 --json out.json]
#   bench/cpu/run.sh build --quick --only q8_0,q8_0-inplace,q8_0-gemv --cases decode,prefill   # repacked vs in place
#   bench/cpu/run.sh build --quick --only q8_0 --cases decode,batch,taken      # one core taken
# Builds the pagellm binary in build-dir (default build/) first. Takes ~15 min (--quick ~5)
# on an idle 2-core machine; run it on an idle machine and report the printed loads.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
ninja -C "$build" pagellm >/dev/null
exec /usr/bin/python3 "$root/bench/cpu/run.py" --pagellm "$build/pagellm" "$@"
