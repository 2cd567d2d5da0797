#!/usr/bin/env bash
# Sets up a fresh machine (packages, npm references, build) and runs the full test
# suite: C++ unit tests, kernel conformance, golden logits against PyTorch, and the
# comparisons with Hugging Face tokenizers and Jinja — all through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/node-env.sh
cd build
ctest --output-on-failure -j 2 --timeout 900 "$@"
