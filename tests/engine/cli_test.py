#!/usr/bin/env python3
"""CLI-level tests of `pagellm generate --input/--output` (JSONL batch mode) and
`pagellm bench throughput`, on a qwen3-tiny dummy checkpoint made here.

usage: cli_test.py PAGELLM_BINARY WORK_DIR

Independent checks: "Hello world" is [9707, 1879] in the Qwen2/3 vocabulary (HF
tokenizers); greedy batch results must equal the single-request `generate` path; the
bench's counts follow from its flags (vLLM: total_num_tokens = prompt + output).
Ends with an "N passed, N failed" line; exits non-zero on any failure.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # tests/support/checks.py

PAGELLM, WORK = sys.argv[1], sys.argv[2]
ENGINE_FLAGS = ["--kv-cache-memory", str(64 << 20), "--max-model-len", "2048"]
ENV = dict(os.environ, OMP_NUM_THREADS="2", OMP_WAIT_POLICY="PASSIVE")
check = Checks()


def run(args, expect_ok=True):
    p = subprocess.run([PAGELLM, *args], capture_output=True, text=True, env=ENV, timeout=120)
    if expect_ok and p.returncode != 0:
        print(f"command failed ({p.returncode}): {' '.join(args)}\n{p.stderr}", flush=True)
    return p


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")


def generate_batch(model, rows, name, extra=()):
    inp, out = os.path.join(WORK, name + ".jsonl"), os.path.join(WORK, name + ".out.jsonl")
    write_jsonl(inp, rows)
    p = run(["generate", "--model", model, "--input", inp, "--output", out, *ENGINE_FLAGS, *extra])
    if p.returncode != 0:
        return None
    with open(out) as f:
        return [json.loads(line) for line in f]


def test_generate_input(model):
    ids20 = list(range(1000, 1020))
    greedy = {"temperature": 0, "ignore_eos": True}
    rows = [
        {"prompt": "Hello world", "max_tokens": 8, **greedy},
        {"prompt_token_ids": ids20, "max_tokens": 5, **greedy},
        {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "temperature": 0.7, "seed": 3,
         "ignore_eos": True},
        {"prompt_token_ids": ids20, "n": 2, "max_tokens": 4, "temperature": 1.0, "seed": 5, "ignore_eos": True},
        {"prompt": "Hello world", "max_tokens": 3, "temperature": 0},
    ]
    res = generate_batch(model, rows, "batch")
    check(res is not None and len(res) == len(rows), "generate --input writes one line per input line")
    if not res or len(res) != len(rows):
        return
    check([r["index"] for r in res] == list(range(len(rows))), "output lines are in input order")
    for i, (row, r) in enumerate(zip(rows, res)):
        for key in ("text", "token_ids", "finish_reason", "num_prompt_tokens", "num_completion_tokens"):
            check(key in r, f"line {i + 1}: has {key}")
        check(r["num_completion_tokens"] == len(r["token_ids"]), f"line {i + 1}: completion count = len(token_ids)")
        if row.get("ignore_eos"):
            check(len(r["token_ids"]) == row["max_tokens"], f"line {i + 1}: max_tokens tokens generated")
            check(r["finish_reason"] == "length", f"line {i + 1}: finish_reason length")
        check(isinstance(r["text"], str), f"line {i + 1}: text is a string")
    check(res[0]["num_prompt_tokens"] == 2, "'Hello world' is 2 prompt tokens ([9707, 1879])")
    check(res[1]["num_prompt_tokens"] == 20, "prompt_token_ids count")
    check(res[2]["num_prompt_tokens"] > 5, "messages go through the chat template")
    check(len(res[3]["outputs"]) == 2 and all(len(o["token_ids"]) == 4 for o in res[3]["outputs"]), "n = 2 outputs")
    check(res[4]["finish_reason"] in ("stop", "length"), "finish_reason without ignore_eos")
    check(res[4]["token_ids"] == res[0]["token_ids"][:len(res[4]["token_ids"])], "same greedy prompt, same prefix")

    # Batched greedy output == the single-request path.
    p = run(["generate", "--model", model, "--prompt-ids", ",".join(map(str, ids20)), "--temperature", "0",
             "--max-tokens", "5", "--ignore-eos", "--output-format", "json", *ENGINE_FLAGS])
    single = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {}
    check(single.get("token_ids") == res[1]["token_ids"], "batched greedy tokens == single generate")
    # Detokenized ids give the text.
    p = subprocess.run([PAGELLM, "detokenize", "--model", model, "--skip-special-tokens"],
                       input=json.dumps(res[1]["token_ids"]), capture_output=True, text=True, env=ENV)
    check(p.returncode == 0 and p.stdout.rstrip("\n") == res[1]["text"], "text == detokenize(token_ids)")
    # Seeded sampling is reproducible across runs.
    again = generate_batch(model, rows, "batch2")
    check(again is not None and [r["outputs"] for r in again] == [r["outputs"] for r in res],
          "seeded batch is reproducible")


def test_generate_input_errors(model):
    good = json.dumps({"prompt": "hi", "max_tokens": 2})
    cases = {
        "not JSON": "{oops",
        "unknown field": json.dumps({"prompt": "hi", "max_token": 2}),
        "out-of-vocabulary id": json.dumps({"prompt_token_ids": [1, 999999]}),
        "bad temperature": json.dumps({"prompt": "hi", "temperature": -1}),
        "prompt too long": json.dumps({"prompt_token_ids": [100] * 3000}),
        "no prompt": json.dumps({"max_tokens": 2}),
    }
    stderr = {}
    for what, bad in cases.items():
        inp = os.path.join(WORK, "bad.jsonl")
        write_jsonl(inp, [good, "", bad])
        p = run(["generate", "--model", model, "--input", inp, "--output", os.path.join(WORK, "bad.out"),
                 *ENGINE_FLAGS], expect_ok=False)
        stderr[what] = p.stderr
        check(p.returncode != 0, f"{what}: generate fails")
        check(f"bad.jsonl:3" in p.stderr, f"{what}: error names the line (got: {p.stderr.strip()[-300:]})")
    too_long = stderr["prompt too long"]
    check("3000 input tokens" in too_long and "2048 tokens" in too_long, "too-long error names both numbers")
    check("max_token" in stderr["unknown field"], "unknown-field error names the field")


def test_bench_throughput(model):
    out = os.path.join(WORK, "bench.json")
    for load_format in ("auto", "dummy"):
        p = run(["bench", "throughput", "--model", model, "--load-format", load_format, "--num-prompts", "4",
                 "--input-len", "16", "--output-len", "8", "--output-json", out, "--max-num-seqs", "3",
                 *ENGINE_FLAGS])
        check(p.returncode == 0, f"bench throughput runs ({load_format})")
        check("Throughput:" in p.stdout and "requests/s" in p.stdout, "bench prints the vLLM summary line")
        with open(out) as f:
            j = json.load(f)
        keys = ["elapsed_time", "num_requests", "total_num_tokens", "total_output_tokens", "requests_per_second",
                "tokens_per_second", "output_tokens_per_second"]
        check(all(k in j for k in keys), "bench JSON has every field")
        check(j["num_requests"] == 4, "num_requests")
        check(j["total_output_tokens"] == 4 * 8, "exact output length (EOS ignored)")
        check(j["total_num_tokens"] == 4 * (16 + 8), "total_num_tokens = prompt + output")
        e = j["elapsed_time"]
        check(e > 0 and abs(j["tokens_per_second"] * e - 96) < 1e-6 * 96 + 1e-6, "tokens_per_second = total / elapsed")
        check(abs(j["requests_per_second"] * e - 4) < 1e-6, "requests_per_second")
        check(abs(j["output_tokens_per_second"] * e - 32) < 1e-5, "output_tokens_per_second")
    p = run(["bench", "throughput", "--model", model, "--num-prompts", "2", "--input-len", "4000",
             "--output-len", "8", *ENGINE_FLAGS], expect_ok=False)
    check(p.returncode != 0 and "4000" in p.stderr, "bench refuses an input longer than max_model_len")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    model = os.path.join(WORK, "qwen3-tiny")
    p = run(["make-dummy-model", "--preset", "qwen3-tiny", "--out", model])
    if p.returncode != 0:
        print("0 passed, 1 failed")
        return 1
    test_generate_input(model)
    test_generate_input_errors(model)
    test_bench_throughput(model)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
