#!/usr/bin/env python3
"""Speculative decoding benchmark: a code-editing workload (the prompt holds the code to
rewrite) through `pagellm generate`, speculation on and off, at 1 and 16 sequences,
greedy. Prints output tokens/s for each and the ratio (over the engine's generation time:
prefill and decode, not the ~1 s of process start and loading, which on a small model was
half the wall time and pulled every ratio toward 1; the wall-time ratio is printed too),
plus the acceptance and the step times the engine logged. Both arms run in the same
invocation, one after the other. Longer outputs (--max-tokens 1024) weigh one-time costs
(the first verification's new buffers) less.

  python3 bench/spec/code_edit_bench.py --pagellm build/pagellm --model /tmp/pydoc [--seqs 1,16]
  # a draft model instead of n-gram lookup; --draft-model = --model measures the
  # verification overhead (every greedy draft accepted; drafts forced on at any batch):
  python3 bench/spec/code_edit_bench.py --model /tmp/q06 --draft-model /tmp/q06 --seqs 1
  # the checkpoint's MTP head (Qwen3.5 / Qwen3-Next; drafts forced on at any batch):
  python3 bench/spec/code_edit_bench.py --model /tmp/q35 --mtp --k 2 --seqs 1

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
        cmd += args.engine_flags
        if spec and args.mtp:
            cmd += ["--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": args.k,
                                                        "disable_by_batch_size": 1 << 20})]
        elif spec and args.draft_model:
            cfg = {"model": args.draft_model, "num_speculative_tokens": args.k}
            if args.draft_model == args.model: cfg["disable_by_batch_size"] = 1 << 20
            cmd += ["--speculative-config", json.dumps(cfg)]
        elif spec:
            cmd += ["--speculative-config", json.dumps({"method": "ngram", "num_speculative_tokens": args.k,
                                                        "prompt_lookup_min": 2, "prompt_lookup_max": 4})]
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit(f"generate failed: {p.stderr[-2000:]}")
        gen = re.search(r"generated tokens in ([0-9.]+) s", p.stderr)
        acc = re.search(r"SpecDecoding metrics: (.*)", p.stderr)
        steps = re.search(r"Decode step times: (.*)", p.stderr)
        with open(os.path.join(d, "out.jsonl")) as f:
            texts = [json.loads(l).get("text", "") for l in f]
        engine_s = float(gen.group(1)) if gen else wall
        return (n * args.max_tokens / engine_s, n * args.max_tokens / wall, (acc.group(1) if acc else ""),
                (steps.group(1) if steps else ""), texts)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pagellm", default="build/pagellm")
    ap.add_argument("--model", required=True)
    ap.add_argument("--seqs", default="1,16")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--draft-model", default="", help="speculate with this draft model instead of n-gram lookup")
    ap.add_argument("--mtp", action="store_true", help="speculate with the checkpoint's MTP head")
    ap.add_argument("--engine-flags", default="", help="more flags for both arms, e.g. '--dtype bfloat16'")
    args = ap.parse_args()
    args.engine_flags = args.engine_flags.split()
    method = "mtp" if args.mtp else "draft model" if args.draft_model else "ngram"
    for n in [int(x) for x in args.seqs.split(",")]:
        off, off_wall, _, steps_off, t_off = run(args, n, False)
        on, on_wall, acc, steps, t_on = run(args, n, True)
        same = "same text" if t_on == t_off else "TEXT DIFFERS"
        print(f"{n:3d} seqs: off {off:8.1f} tok/s, {method} k={args.k} {on:8.1f} tok/s, {on / off:5.2f}x "
              f"(wall time with loading: {on_wall / off_wall:4.2f}x; {same}) {acc}")
        print(f"          without speculation: {steps_off}\n          with: {steps}")

if __name__ == "__main__":
    main()
