"""What the tensor-parallel CLI tests share (tp_test.py: mp backend; mpi_test.py and
mpi_netns_test.py: mpi backend): the engine flags, the request rows, reading
`generate --output` results, comparing them with TP=1, and small HTTP/process helpers.

Tolerances (compare_with_base): token ids must be identical. Logprobs of the chosen
tokens differ only by the order of the fp32 sums (a TP rank sums its heads' / columns'
share, the all-reduce adds the shares): f32 weights and KV at most 1e-3 (measured
~1e-5). With bf16 weights the tolerance depends on the kernel's activations
(BF16_TOLERANCE): the AVX2 kernel multiplies in f32 (measured <= 3e-3, allowed 0.05);
AVX-512 BF16 and AMX round each activation to bf16 before the dot product, so an fp32
difference in the last bit of a sum can move one activation by a bf16 step (2^-8), which
the random-weight model amplifies (measured 0.11 on Zen 4, allowed 0.25; for scale,
the same TP=1 run under PAGELLM_ISA=avx2 vs avx512 differs by 0.38 and in tokens).
"""
import json
import os
import socket
import subprocess
import urllib.error
import urllib.request

# Two requests at a time: the later prompts find the shared prefix in the cache.
FLAGS = ["--kv-cache-memory", str(32 << 20), "--max-model-len", "1024", "--max-num-batched-tokens", "32",
         "--enable-chunked-prefill", "--enable-prefix-caching", "--max-num-seqs", "2"]
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")


def cpu_rounds_activations_to_bf16():
    """True when the bf16 matmul kernels take bf16 activations (AVX-512 BF16 or AMX is
    present and PAGELLM_ISA does not force avx2): see the module docstring."""
    if os.environ.get("PAGELLM_ISA") == "avx2":
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        return True
    return "avx512_bf16" in flags or "amx_bf16" in flags


BF16_TOLERANCE = 0.25 if cpu_rounds_activations_to_bf16() else 0.05
DTYPES = (("float32", 1e-3), ("bfloat16", BF16_TOLERANCE))  # (KV/weight dtype, logprob tolerance)


def rows():
    prefix = list(range(2000, 2048))
    greedy = {"temperature": 0, "ignore_eos": True, "logprobs": 1}
    out = [{"prompt_token_ids": prefix + [3000 + i] * (i + 1), "max_tokens": 12, **greedy} for i in range(4)]
    out.append({"prompt": "Hello world, tell me a story about a cat", "max_tokens": 16, **greedy})
    out.append({"prompt_token_ids": list(range(500, 590)), "max_tokens": 8, **greedy})
    return out


def write_rows(path):
    with open(path, "w") as f:
        for r in rows():
            f.write(json.dumps(r) + "\n")


def read_rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def make_model(pagellm, work, dtype):
    """A qwen3-tiny dummy checkpoint in `work`; returns its path (None on failure)."""
    model = os.path.join(work, f"qwen3-tiny-{dtype}")
    p = subprocess.run([pagellm, "make-dummy-model", "--preset", "qwen3-tiny", "--out", model, "--dtype",
                        "f32" if dtype == "float32" else "bf16"], capture_output=True, text=True, env=ENV, timeout=120)
    return model if p.returncode == 0 else None


def dummy_models(pagellm, work, check):
    """Yields (dtype, logprob tolerance, model path) for each of DTYPES, made in `work`;
    a model that cannot be made is a failed check and is skipped."""
    for dtype, tol in DTYPES:
        model = make_model(pagellm, work, dtype)
        check(model is not None, f"make-dummy-model {dtype}")
        if model is not None:
            yield dtype, tol, model


def chosen_logprobs(r):
    lp = r.get("logprobs")
    if isinstance(lp, dict):
        lp = lp.get("token_logprobs") or lp.get("content")
    vals = []
    for x in lp or []:
        vals.append(x["logprob"] if isinstance(x, dict) else x)
    return vals


def compare_with_base(check, label, base, res, tol):
    """Checks `res` (rows of a TP run) against `base` (TP=1); returns the largest
    chosen-token logprob difference."""
    worst = 0.0
    check(len(base) == len(res), f"{label}: as many rows as TP=1 ({len(res)} vs {len(base)})")
    for i, (a, b) in enumerate(zip(base, res)):
        check(a["token_ids"] == b["token_ids"], f"{label} row {i}: greedy tokens equal TP=1 "
              f"({a['token_ids']} vs {b['token_ids']})")
        la, lb = chosen_logprobs(a), chosen_logprobs(b)
        check(len(la) == len(a["token_ids"]) and len(lb) == len(la), f"{label} row {i}: logprobs returned")
        worst = max([worst] + [abs(x - y) for x, y in zip(la, lb)])
    cached = [sum(r.get("num_cached_tokens", 0) for r in x) for x in (base, res)]
    check(cached[0] == cached[1] and cached[0] > 0, f"{label}: same prefix-cache hits as TP=1 ({cached})")
    check(worst <= tol, f"{label}: chosen-token logprobs within {tol} of TP=1 (max diff {worst:.2e})")
    print(f"{label}: max |logprob diff| vs TP=1 = {worst:.3e}; cached prompt tokens {cached[1]}", flush=True)
    return worst


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(port, path, body=None, timeout=10, host="127.0.0.1"):
    req = urllib.request.Request(f"http://{host}:{port}{path}", data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, ConnectionError, socket.timeout):
        return None, ""


def completion(port, timeout=30):
    return http(port, "/v1/completions", {"model": "m", "prompt": "Hello", "max_tokens": 4, "temperature": 0}, timeout)


def wait_exit(proc, timeout):
    """The exit code, or None after killing a process that did not exit in time."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None
