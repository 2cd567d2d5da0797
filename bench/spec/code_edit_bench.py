#!/usr/bin/env python3
"""Speculative decoding benchmark: a code-editing workload (the prompt holds the code to
rewrite) through `pagellm generate`, n-gram speculation on and off, at 1 and 16
sequences, greedy. Prints output tokens/s for each and the ratio, plus the acceptance
the engine logged. Both arms run in the same invocation, one after the other.

  python3 bench/spec/code_edit_bench.py --pagellm build/pagellm --model /tmp/pydoc [--seqs 1,16]

State the CPU (lscpu) and the load with the figures."""
import argparse, json, os, re, subprocess, sys, tempfile, time

CODE = '''def read_config(path):
    with open(path) as f:
        lines = f.readlines()
    result = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, value = line.split("=", 1)
        result[key.strip()] = value.strip()
    return result


def write_config(path, config):
    with open(path, "w") as f:
        for key, value in sorted(config.items()):
            f.write(key + " = " + value + "\\n")
'''

def prompts(n):
    asks = ["Rewrite this code with type hints:", "Add docstrings to this code:", "Rename result to settings in this code:",
            "Rewrite this code to use pathlib:"]
    return [f"{asks[i % len(asks)]}\n\n{CODE}\nHere is the rewritten code:\n\n" for i in range(n)]

def run(args, n, spec):
    with tempfile.TemporaryDirectory() as d:
        inp = os.path.join(d, "in.jsonl")
        with open(inp, "w") as f:
            for p in prompts(n):
                f.write(json.dumps({"prompt": p, "max_tokens": args.max_tokens, "temperature": 0, "ignore_eos": True}) + "\n")
        cmd = [args.pagellm, "generate", "--model", args.model, "--input", inp, "--output", os.path.join(d, "out.jsonl"),
               "--max-num-seqs", str(n)]
        if spec:
            cmd += ["--speculative-config", json.dumps({"method": "ngram", "num_speculative_tokens": args.k,
                                                        "prompt_lookup_min": 2, "prompt_lookup_max": 4})]
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit(f"generate failed: {p.stderr[-2000:]}")
        acc = re.search(r"SpecDecoding metrics: (.*)", p.stderr)
        with open(os.path.join(d, "out.jsonl")) as f:
            texts = [json.loads(l).get("text", "") for l in f]
        # Wall time includes loading (~1 s, the same in both arms): a conservative ratio.
        return n * args.max_tokens / wall, (acc.group(1) if acc else ""), texts

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pagellm", default="build/pagellm")
    ap.add_argument("--model", required=True)
    ap.add_argument("--seqs", default="1,16")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--k", type=int, default=4)
    args = ap.parse_args()
    for n in [int(x) for x in args.seqs.split(",")]:
        off, _, t_off = run(args, n, False)
        on, acc, t_on = run(args, n, True)
        same = "same text" if t_on == t_off else "TEXT DIFFERS"
        print(f"{n:3d} seqs: off {off:8.1f} tok/s, ngram k={args.k} {on:8.1f} tok/s, {on / off:5.2f}x ({same}) {acc}")

if __name__ == "__main__":
    main()
