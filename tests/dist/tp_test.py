#!/usr/bin/env python3
"""Tensor parallelism end to end: `pagellm generate --tensor-parallel-size N` must give
the same greedy tokens as N = 1, on qwen3-tiny dummy checkpoints made here, with
chunked prefill (a 32-token step budget, 8-token chunks) and prefix caching (prompts
sharing a 48-token prefix) on.

usage: tp_test.py PAGELLM_BINARY WORK_DIR

Tolerances: as tp_common.compare_with_base states (identical token ids; logprobs within
1e-3 for f32, 0.05 for bf16). Ends with "N passed, N failed"; exits non-zero on failure.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # tests/support/checks.py
from tp_common import (ENV, FLAGS, completion, compare_with_base, dummy_models, free_port, http,  # noqa: E402
                       read_rows, wait_exit, write_rows)

PAGELLM, WORK = sys.argv[1], sys.argv[2]
check = Checks()


def run(args, timeout=120):
    return subprocess.run([PAGELLM, *args], capture_output=True, text=True, env=ENV, timeout=timeout)


def generate(model, name, extra):
    inp, outp = os.path.join(WORK, name + ".in.jsonl"), os.path.join(WORK, name + ".out.jsonl")
    write_rows(inp)
    p = run(["generate", "--model", model, "--input", inp, "--output", outp, *FLAGS, *extra])
    if p.returncode != 0:
        print(f"generate {name} failed ({p.returncode}):\n{p.stderr[-3000:]}", flush=True)
        return None, p.stderr
    return read_rows(outp), p.stderr


def compare(model, dtype, tol):
    base, _ = generate(model, f"{dtype}-tp1", ["--tensor-parallel-size", "1", "--kv-cache-dtype", dtype])
    check(base is not None, f"{dtype}: TP=1 runs")
    for tp in (2, 4):
        res, err = generate(model, f"{dtype}-tp{tp}", ["--tensor-parallel-size", str(tp), "--kv-cache-dtype", dtype])
        check(res is not None, f"{dtype}: TP={tp} runs")
        if base is None or res is None:
            continue
        check(f"tensor parallel {tp} of {tp}" not in err and "per rank (tensor parallel" in err,
              f"{dtype}: TP={tp} prints the per-rank memory plan")
        compare_with_base(check, f"{dtype} TP={tp}", base, res, tol)


def test_errors(model):
    p = run(["generate", "--model", model, "--prompt", "hi", "--max-tokens", "2", "--tensor-parallel-size", "3",
             *FLAGS])
    check(p.returncode != 0 and "num_attention_heads" in p.stderr, "TP=3 is refused naming num_attention_heads")
    check(not [f for f in os.listdir("/dev/shm") if f.startswith("pagellm-")], "no shared-memory segment is left")


def test_bench_throughput(model):
    p = run(["bench", "throughput", "--model", model, "--num-prompts", "4", "--input-len", "24", "--output-len", "4",
             "--tensor-parallel-size", "2", *FLAGS])
    check(p.returncode == 0 and "Throughput:" in p.stdout, "bench throughput runs with --tensor-parallel-size 2")


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def start_server(model, env_extra=None):
    port = free_port()
    env = dict(ENV, **(env_extra or {}))
    proc = subprocess.Popen([PAGELLM, "serve", model, "--host", "127.0.0.1", "--port", str(port),
                             "--tensor-parallel-size", "2", "--served-model-name", "m", *FLAGS], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if http(port, "/health", timeout=2)[0] == 200:
            return proc, port
        time.sleep(0.2)
    proc.kill()
    print(f"server did not start:\n{proc.stderr.read()[-2000:]}", flush=True)
    return None, port


def test_serve_faults(model):
    # A killed worker: /health 503, then rank 0 exits non-zero, within seconds.
    proc, port = start_server(model)
    check(proc is not None, "serve --tensor-parallel-size 2 starts")
    if proc is None:
        return
    status, _ = completion(port)
    check(status == 200, "a completion is served with TP=2")
    workers = children(proc.pid)
    check(len(workers) == 1, f"rank 0 has one worker process ({workers})")
    killed_at = time.time()
    for w in workers:
        os.kill(w, signal.SIGKILL)
    saw_503 = False
    while time.time() - killed_at < 5 and proc.poll() is None:
        saw_503 = saw_503 or http(port, "/health", timeout=1)[0] == 503
        time.sleep(0.1)
    rc = wait_exit(proc, 10)
    took = time.time() - killed_at
    check(saw_503 or rc not in (None, 0), "/health answers 503 once the worker is dead")
    check(rc not in (None, 0) and took < 8, f"rank 0 exits non-zero within seconds of a worker kill (rc {rc}, {took:.1f} s)")
    # A hung worker (SIGSTOP): the next step times out, then the same.
    proc, port = start_server(model, {"PAGELLM_DIST_TIMEOUT_S": "2"})
    if proc is None:
        check(False, "serve restarts")
        return
    workers = children(proc.pid)
    for w in workers:
        os.kill(w, signal.SIGSTOP)
    stopped_at = time.time()
    status, _ = completion(port)
    rc = wait_exit(proc, 15)
    took = time.time() - stopped_at
    check(status != 200, f"a request during a hung worker fails ({status})")
    check(rc not in (None, 0) and took < 12, f"rank 0 exits non-zero after a worker hang (rc {rc}, {took:.1f} s)")
    for w in workers:
        try:
            os.kill(w, signal.SIGKILL)
        except ProcessLookupError:
            pass
    # SIGTERM drains and stops every rank.
    proc, port = start_server(model)
    if proc is None:
        check(False, "serve restarts")
        return
    workers = children(proc.pid)
    check(completion(port)[0] == 200, "served again after restart")
    proc.send_signal(signal.SIGTERM)
    rc = wait_exit(proc, 30)
    time.sleep(0.3)
    check(rc == 0, f"SIGTERM: rank 0 exits 0 (rc {rc})")
    check(all(not os.path.exists(f"/proc/{w}") for w in workers), "SIGTERM: the worker ranks are gone too")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    model = None
    for dtype, tol, model in dummy_models(PAGELLM, WORK, check):
        compare(model, dtype, tol)
    test_errors(model)
    test_bench_throughput(model)
    test_serve_faults(model)
    sys.exit(check.summary())


if __name__ == "__main__":
    main()
