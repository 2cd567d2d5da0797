#!/usr/bin/env python3
"""Two hosts over Open MPI: the `mpi` executor backend across two network namespaces.

Namespaces A and B (made here, deleted at the end, with every process left in them)
are joined by one veth pair in a private subnet. mpirun runs in A with a host file of
both addresses and `--mca plm_rsh_agent <script>`, where the script starts Open MPI's
daemon for B inside B with `ip netns exec` (no ssh); `--mca btl tcp,self` and the
*_if_include options keep every byte on the veth. The job's greedy tokens must equal
TP=1's (tp_common.compare_with_base), and the bytes that crossed the link per forward
step are printed (veth counters: MPI wire-up, flags, weights none, steps all).

usage: mpi_netns_test.py PAGELLM_BINARY WORK_DIR [--engine-flags "--tensor-parallel-size 2"] [--ranks 2]
  --engine-flags: the parallel layout under test, so the same two-host setup can run
  pipeline parallelism (--pipeline-parallel-size 2) once it exists; --ranks: its ranks.
Exits 77 (CTest: skipped) where network namespaces cannot be made (not root, no
CAP_NET_ADMIN); ends with "N passed, N failed" otherwise.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # tests/support/checks.py
from tp_common import ENV, FLAGS, compare_with_base, dummy_models, read_rows, write_rows  # noqa: E402

PREFIX = "pllmmpi"  # namespace names: pllmmpi<pid of the test>a / b
SUBNET, ADDR_A, ADDR_B = "10.231.7.0/24", "10.231.7.1", "10.231.7.2"
check = Checks()


def ip(*args, ns=None):
    cmd = ["ip", *(["-n", ns] if ns else []), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=20)


def kill_namespace(ns):
    pids = ip("netns", "pids", ns).stdout.split()
    for p in pids:
        try:
            os.kill(int(p), 9)
        except (ProcessLookupError, ValueError):
            pass
    ip("netns", "del", ns)


def remove_stale_namespaces():
    """Namespaces of earlier runs that were killed before their cleanup (a CTest timeout)."""
    for line in ip("netns", "list").stdout.splitlines():
        m = re.match(rf"({PREFIX}(\d+)[ab])\b", line)
        if m and not os.path.exists(f"/proc/{m.group(2)}"):
            kill_namespace(m.group(1))


class TwoHosts:
    def __init__(self):
        tag = f"{PREFIX}{os.getpid()}"
        self.ns_a, self.ns_b = tag + "a", tag + "b"
        self.veth_a, self.veth_b = f"pm{os.getpid()}a", f"pm{os.getpid()}b"

    def __enter__(self):
        remove_stale_namespaces()
        p = ip("netns", "add", self.ns_a)
        if p.returncode != 0:
            print(f"SKIP: ip netns is not permitted here ({p.stderr.strip()})", flush=True)
            sys.exit(77)
        steps = [(None, "netns", "add", self.ns_b),
                 (None, "link", "add", self.veth_a, "type", "veth", "peer", "name", self.veth_b),
                 (None, "link", "set", self.veth_a, "netns", self.ns_a),
                 (None, "link", "set", self.veth_b, "netns", self.ns_b),
                 (self.ns_a, "addr", "add", ADDR_A + "/24", "dev", self.veth_a),
                 (self.ns_b, "addr", "add", ADDR_B + "/24", "dev", self.veth_b)]
        for ns, veth in ((self.ns_a, self.veth_a), (self.ns_b, self.veth_b)):
            steps += [(ns, "link", "set", veth, "up"), (ns, "link", "set", "lo", "up")]
        for ns, *args in steps:
            p = ip(*args, ns=ns)
            if p.returncode != 0:
                raise RuntimeError(f"ip {' '.join(args)}: {p.stderr.strip()}")
        return self

    def __exit__(self, *exc):
        for ns in (self.ns_a, self.ns_b):
            kill_namespace(ns)
        left = ip("netns", "list").stdout
        check(self.ns_a not in left and self.ns_b not in left, "the namespaces are deleted")

    def link_bytes(self):
        """rx + tx bytes of B's end of the veth (everything between the hosts)."""
        p = ip("-s", "-j", "link", "show", self.veth_b, ns=self.ns_b)
        stats = json.loads(p.stdout)[0]["stats64"]
        return stats["rx"]["bytes"] + stats["tx"]["bytes"]


def write_agent(work, hosts):
    """The plm_rsh_agent: `agent HOST COMMAND...` runs COMMAND in HOST's namespace."""
    path, log = os.path.join(work, "netns_agent.sh"), os.path.join(work, "netns_agent.log")
    with open(path, "w") as f:
        f.write(f"""#!/bin/sh
# Open MPI's remote launcher for the test's namespaces: $1 = host, the rest = command.
host=$1; shift
case "$host" in
  {ADDR_A}) ns={hosts.ns_a} ;;
  {ADDR_B}) ns={hosts.ns_b} ;;
  *) echo "netns agent: unknown host $host" >&2; exit 1 ;;
esac
echo "$host $ns" >> {shlex.quote(log)}
exec ip netns exec "$ns" /bin/sh -c "$*"
""")
    os.chmod(path, 0o755)
    return path, log


def run_job(pagellm, work, hosts, model, name, engine_flags, ranks, extra):
    hostfile = os.path.join(work, "hosts")
    with open(hostfile, "w") as f:
        f.write(f"{ADDR_A} slots={(ranks + 1) // 2}\n{ADDR_B} slots={ranks // 2}\n")
    agent, agent_log = write_agent(work, hosts)
    inp, outp = os.path.join(work, name + ".in.jsonl"), os.path.join(work, name + ".out.jsonl")
    write_rows(inp)
    mpirun = ["ip", "netns", "exec", hosts.ns_a, "mpirun", "--allow-run-as-root", "--bind-to", "none", "-np",
              str(ranks), "--hostfile", hostfile, "--map-by", "node", "--mca", "plm_rsh_agent", agent,
              "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", SUBNET, "--mca", "oob_tcp_if_include", SUBNET]
    before = hosts.link_bytes()
    p = subprocess.run([*mpirun, pagellm, "generate", "--model", model, "--input", inp, "--output", outp, *FLAGS,
                        *engine_flags, "--distributed-executor-backend", "mpi", *extra],
                       capture_output=True, text=True, env=ENV, timeout=240)
    crossed = hosts.link_bytes() - before
    if p.returncode != 0:
        print(f"{name} failed ({p.returncode}):\n{p.stdout[-1500:]}\n{p.stderr[-3000:]}", flush=True)
        return None, crossed, p.stderr
    with open(agent_log) as f:
        check(hosts.ns_b in f.read(), f"{name}: Open MPI started host B's daemon in namespace B")
    return read_rows(outp), crossed, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pagellm")
    ap.add_argument("work")
    ap.add_argument("--engine-flags", default="--tensor-parallel-size 2")
    ap.add_argument("--ranks", type=int, default=2)
    a = ap.parse_args()
    if shutil.which("mpirun") is None:
        print("mpirun is not installed (scripts/setup.sh installs openmpi-bin)", flush=True)
        sys.exit(1)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    layout = shlex.split(a.engine_flags)
    with TwoHosts() as hosts:
        for dtype, tol, model in dummy_models(a.pagellm, a.work, check):
            kv = ["--kv-cache-dtype", dtype]
            inp, outp = os.path.join(a.work, dtype + "-tp1.in.jsonl"), os.path.join(a.work, dtype + "-tp1.out.jsonl")
            write_rows(inp)
            p = subprocess.run([a.pagellm, "generate", "--model", model, "--input", inp, "--output", outp, *FLAGS, *kv],
                               capture_output=True, text=True, env=ENV, timeout=120)
            check(p.returncode == 0, f"{dtype}: TP=1 runs")
            res, crossed, err = run_job(a.pagellm, a.work, hosts, model, f"{dtype}-netns", layout, a.ranks, kv)
            check(res is not None, f"{dtype}: {a.engine_flags} across two namespaces runs")
            if p.returncode != 0 or res is None:
                continue
            compare_with_base(check, f"{dtype} two hosts ({a.engine_flags})", read_rows(outp), res, tol)
            m = re.search(r"tensor parallel rank 0: (\d+) forward steps", err)
            steps = int(m.group(1)) if m else 0
            check(steps > 0, f"{dtype}: rank 0 reports its forward steps")
            sent = dict(re.findall(r"tensor parallel rank (\d+): .*; ([0-9.]+) KB sent per step", err))
            print(f"{dtype}: {crossed} bytes crossed the link in the whole job, {steps} forward steps: "
                  f"{crossed / max(steps, 1):.0f} bytes per step (incl. start-up); payload sent per step: "
                  f"rank 0 {sent.get('0')} KB, rank 1 {sent.get('1')} KB", flush=True)
    sys.exit(check.summary())


if __name__ == "__main__":
    main()
