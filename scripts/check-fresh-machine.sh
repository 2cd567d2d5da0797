#!/usr/bin/env bash
# Checks that the README's two commands work on a fresh Debian 12 machine: builds a
# minimal Debian 12 root with debootstrap in a scratch folder, clones the committed state
# of this repository into it, and runs, inside a chroot (the root bind-mounted onto
# itself, /proc, /sys and /dev mounted; services bind loopback or network namespaces
# the tests make):
#     bash scripts/run-demo.sh     (set up, serve the default model, answer a request)
#     bash scripts/run-tests.sh    (set up, pass the tests)
# Then prints how long each took and what failed. Nothing installed on this machine by
# hand can leak in: the root starts with Debian's minbase variant only.
#
#   sudo bash scripts/check-fresh-machine.sh [--only demo|tests] [--keep] [--dir DIR] [--reuse-root]
#
# --keep leaves the root in DIR; --reuse-root starts from a kept root made by debootstrap
# alone (DIR/root-base), saving its download: the repository and everything setup
# installs are always laid anew. Logs stay in DIR/logs.
# Needs root, debootstrap (installed if missing) and Debian's mirror. Takes long (on 2
# cores: ~5 min for the root, ~25 min for the demo's setup and build, ~15 min for the tests).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
ONLY=""
KEEP=0
REUSE=0
WORK=""
while [ $# -gt 0 ]; do
  case "$1" in
    --only) ONLY=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --reuse-root) REUSE=1; shift ;;
    --dir) WORK=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "check-fresh-machine: needs root (chroot, mount)" >&2; exit 2; }
WORK=${WORK:-$(mktemp -d /var/tmp/pagellm-fresh.XXXXXX)}
ROOT=$WORK/root
LOGS=$WORK/logs
mkdir -p "$LOGS"
MIRROR=${MIRROR:-http://deb.debian.org/debian}

command -v debootstrap >/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
}

MOUNTS=()
cleanup() {
  # Processes left running inside the root (a server whose test failed) go first.
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$ROOT" ] && kill -9 "${p#/proc/}" 2>/dev/null || true
  done
  # Mounts made inside the root (ip netns add binds /run/netns/NAME) go before ours.
  awk -v r="$ROOT/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[$i]}" 2>/dev/null || true; done
  if [ "$KEEP" -eq 0 ]; then rm -rf "$ROOT" "$WORK/root-base"; else echo "kept $ROOT"; fi
  echo "logs: $LOGS"
}
trap cleanup EXIT

now() { date +%s; }
declare -A SECONDS_OF RESULT_OF

step_root() {
  local t0; t0=$(now)
  local base=$WORK/root-base
  if [ "$REUSE" -eq 0 ] || [ ! -f "$base/etc/debian_version" ]; then
    rm -rf "$base"
    echo "[fresh] debootstrap bookworm (minbase) into $base"
    debootstrap --variant=minbase --include=ca-certificates bookworm "$base" "$MIRROR" >"$LOGS/debootstrap.log" 2>&1
  fi
  rm -rf "$ROOT"
  cp -a "$base" "$ROOT"
  # The network's own trust (a proxy's local CA certificates, if this machine has any)
  # belongs to the machine, not to the project: carry it into the root as it is here.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$ROOT/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
    chroot "$ROOT" update-ca-certificates >/dev/null 2>&1
  fi
  # The same suites a Debian 12 machine has: main, updates and security.
  cat >"$ROOT/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
  cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
  # The root must be a mount point of its own: `ip netns exec` (the multi-host tests)
  # runs `mount --make-rslave /`, which fails with EINVAL on a plain directory.
  mount --bind "$ROOT" "$ROOT"
  MOUNTS+=("$ROOT")
  for m in proc sys dev dev/pts; do
    mkdir -p "$ROOT/$m"
    case $m in
      proc) mount -t proc proc "$ROOT/proc" ;;
      sys) mount -t sysfs sys "$ROOT/sys" ;;
      dev) mount --bind /dev "$ROOT/dev" ;;
      dev/pts) mount --bind /dev/pts "$ROOT/dev/pts" ;;
    esac
    MOUNTS+=("$ROOT/$m")
  done
  mount -t tmpfs -o size=8g tmpfs "$ROOT/dev/shm" && MOUNTS+=("$ROOT/dev/shm")
  # Only what is committed: a clone, not a copy of this work tree.
  git clone -q --no-local "$REPO" "$ROOT/pagellm"
  echo "[fresh] testing commit $(git -C "$ROOT/pagellm" log -1 --format='%h %s' | cut -c1-80)"
  SECONDS_OF[root]=$(( $(now) - t0 ))
  RESULT_OF[root]=ok
}

# Runs one README command inside the root, as a new login of root would.
run_in_root() {
  local name=$1 cmd=$2 t0 rc
  t0=$(now)
  echo "[fresh] $name: $cmd (log: $LOGS/$name.log)"
  set +e
  chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb PORT="${PORT:-18631}" \
    ${NODE_EXTRA_CA_CERTS:+NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt} \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /pagellm && $cmd" </dev/null >"$LOGS/$name.log" 2>&1
  rc=$?
  set -e
  SECONDS_OF[$name]=$(( $(now) - t0 ))
  RESULT_OF[$name]=$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)")
  if [ $rc -ne 0 ]; then
    echo "[fresh] $name failed; last lines of its log:"
    tail -n 40 "$LOGS/$name.log" | sed 's/^/    /'
  fi
}

step_root
[ "$ONLY" = "tests" ] || run_in_root demo "bash scripts/run-demo.sh"
[ "$ONLY" = "demo" ] || run_in_root tests "bash scripts/run-tests.sh"

echo
echo "[fresh] summary ($(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores)"
status=0
for name in root demo tests; do
  [ -n "${RESULT_OF[$name]:-}" ] || continue
  printf '  %-6s %-18s %5d s\n' "$name" "${RESULT_OF[$name]}" "${SECONDS_OF[$name]}"
  [ "${RESULT_OF[$name]}" = ok ] || status=1
done
if [ -f "$LOGS/demo.log" ]; then
  echo "  demo output:"
  grep -v '^setup:' "$LOGS/demo.log" | tail -n 12 | sed 's/^/    /'
fi
[ -f "$LOGS/tests.log" ] && grep -E 'tests passed|tests failed' "$LOGS/tests.log" | sed 's/^/  /'
[ "$KEEP" -eq 1 ] && cp -r "$LOGS" "$WORK/logs-final" 2>/dev/null || true
exit $status
