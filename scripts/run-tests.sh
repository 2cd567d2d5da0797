#!/usr/bin/env bash
# Sets up a fresh machine (packages, npm references, build) and runs the full test
# suite: C++ unit tests, kernel conformance, golden logits against PyTorch, and the
# comparisons with Hugging Face tokenizers and Jinja — all through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/node-env.sh
# glibc's malloc backs its large blocks with transparent huge pages (THP in "madvise" mode;
# no effect where THP is off). The tests fault in gigabytes of fresh memory (float64 reference
# logits, 151,936-row vocabularies and logits, converted weights), and on the 2-core VMs we run
# on each 4 KiB page fault is expensive: one golden case took 16.4 s with 4 KiB pages and 8.4 s
# with this, `pagellm logits` on qwen3-tiny 0.92 s and 0.42 s; same results, same peak RSS.
# pagellm's own large buffers already ask for huge pages (src/backend/aligned_buffer.cc).
export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1"
cd build
ctest --output-on-failure -j 2 --timeout 900 "$@"
