#!/usr/bin/env bash
# Installs the independent references we test against, pinned, into .refs/node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .refs
cp tests/refs/package.json .refs/package.json
if [ ! -f .refs/.installed ] || ! cmp -s tests/refs/package.json .refs/.installed; then
  echo "setup: installing npm references into .refs/"
  (cd .refs && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  # node-llama-cpp pulls prebuilt llama.cpp for every platform and GPU as optional
  # packages (~650 MB); only the linux-x64 CPU build is used (never built or downloaded
  # at run time: tests call getLlama({build: "never", skipDownload: true})).
  rm -rf .refs/node_modules/@node-llama-cpp/linux-x64-cuda* .refs/node_modules/@node-llama-cpp/linux-x64-vulkan \
         .refs/node_modules/@node-llama-cpp/linux-arm* .refs/node_modules/@node-llama-cpp/mac-* \
         .refs/node_modules/@node-llama-cpp/win-*
  cp tests/refs/package.json .refs/.installed
fi
