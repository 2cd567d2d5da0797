#!/usr/bin/env bash
# Installs the independent references we test against, pinned, into .refs/node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .refs
cp tests/refs/package.json .refs/package.json
if [ ! -f .refs/.installed ] || ! cmp -s tests/refs/package.json .refs/.installed; then
  echo "setup: installing npm references into .refs/"
  (cd .refs && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  cp tests/refs/package.json .refs/.installed
fi
