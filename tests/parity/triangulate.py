#!/usr/bin/python3
"""Diagnostic: where does a pagellm vs llama.cpp logits gap come from? Runs, on one GGUF and
one prompt, llama.cpp in several settings, pagellm in several settings and the float64
reference (tests/golden/qwen_reference.py) in several numerical recipes, all on the same
weights (the GGUF dequantized exactly by gguf-py, tests/parity/gguf_to_hf.py), and prints
the matrix of max |delta logprob| between every pair (over the union of both sides' top 20
at every prompt position) plus top-1 disagreements.

  /usr/bin/python3 tests/parity/triangulate.py --pagellm build/pagellm --workdir /tmp/tri \
      --preset qwen3-tiny --outtype q8_0 [--prompt random|chat] [--layers N] [--runs a,b,...]

If pagellm ~ reference(pagellm's recipe) and llama.cpp ~ reference(llama.cpp's recipe) while
the two recipes are far apart, the gap is precision recipe amplified by the model, not a bug.
--layers N keeps only the first N decoder layers (a depth sweep on the same weights).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gguf_parity import EVAL, ENV, log_softmax, prompts  # noqa: E402

REFERENCE = os.path.join(HERE, "..", "golden", "qwen_reference.py")
TOPK = 20


def run(cmd):
    res = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    if res.returncode != 0:
        sys.exit(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-3000:]}")
    return res.stdout


def cached(out, cmd):
    # Outputs are named by everything that determines them, so a rerun reuses them.
    if not os.path.exists(out):
        run(cmd)


def llama_cpp(args, gguf, ids, fa, kv):
    out = os.path.join(args.workdir, f"llama_{args.prompt}_{os.path.basename(gguf)}_{fa}_{kv}.f32")
    cached(out, [sys.executable, EVAL, "--model", gguf, "--tokens", ",".join(map(str, ids)), "--top-k", "1",
         "--full-out-f32", out, "--flash-attention", fa, "--kv-type", kv])
    return np.fromfile(out, dtype="<f4").reshape(len(ids), -1).astype(np.float64)


def pagellm(args, model, ids, dtype, kv):
    out = os.path.join(args.workdir, f"pagellm_{args.prompt}_{os.path.basename(model)}_{dtype}_{kv}.npy")
    cached(out, [args.pagellm, "logits", "--model", model, "--prompt-ids", ",".join(map(str, ids)), "--out", out,
         "--dtype", dtype, "--kv-cache-dtype", kv, "--kv-cache-memory", str(64 << 20), "--max-model-len", "2048"])
    return log_softmax(np.load(out))


def reference(args, model_dir, ids, flags):
    out = os.path.join(args.workdir, f"ref_{args.prompt}_{os.path.basename(model_dir)}_{'_'.join(flags) or 'plain'}.npy")
    cached(out, ["/usr/bin/python3", REFERENCE, model_dir, "--ids", ",".join(map(str, ids)), "--out", out] + flags)
    return log_softmax(np.load(out))


def delta(a, b):
    """max |a - b| over the union of both top-20 sets at every position, its median over
    positions, and top-1 disagreements."""
    per_pos, top1 = [], 0
    for ra, rb in zip(a, b):
        idx = np.union1d(np.argsort(-ra)[:TOPK], np.argsort(-rb)[:TOPK])
        per_pos.append(float(np.max(np.abs(ra[idx] - rb[idx]))))
        top1 += int(np.argmax(ra) != np.argmax(rb))
    return max(per_pos), float(np.median(per_pos)), top1


def truncate(src_dir, layers):
    """A copy of a checkpoint (F32) with only its first `layers` decoder layers."""
    dst = f"{src_dir}-L{layers}"
    if not os.path.exists(os.path.join(dst, "config.json")):
        sys.path.insert(0, os.path.join(HERE, "..", "golden"))
        from qwen_reference import read_safetensors  # noqa: E402
        from gguf_to_hf import write_safetensors  # noqa: E402
        w = read_safetensors(os.path.join(src_dir, "model.safetensors"))
        keep = {k: v.numpy().astype(np.float32) for k, v in w.items()
                if not k.startswith("model.layers.") or int(k.split(".")[2]) < layers}
        os.makedirs(dst, exist_ok=True)
        write_safetensors(os.path.join(dst, "model.safetensors"), keep)
        for f in os.listdir(src_dir):
            if f.endswith(".json"):
                cfg = json.load(open(os.path.join(src_dir, f)))
                if f == "config.json":
                    cfg["num_hidden_layers"] = layers
                json.dump(cfg, open(os.path.join(dst, f), "w"))
    return dst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pagellm", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--preset", default="qwen3-tiny")
    ap.add_argument("--outtype", default="q8_0", choices=["f32", "f16", "bf16", "q8_0"])
    ap.add_argument("--prompt", default="random", choices=["random", "chat"])
    ap.add_argument("--gguf", help="use this GGUF instead of converting the preset")
    ap.add_argument("--runs", help="comma-separated subset of run names to compute")
    ap.add_argument("--layers", type=int, help="keep only the first N decoder layers")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    model_dir = os.path.join(args.workdir, args.preset)
    if not os.path.exists(os.path.join(model_dir, "config.json")):
        run([args.pagellm, "make-dummy-model", "--preset", args.preset, "--out", model_dir, "--seed", "11"])
    tag = args.preset
    if args.layers:
        model_dir, tag = truncate(model_dir, args.layers), f"{args.preset}-L{args.layers}"
    gguf = args.gguf or os.path.join(args.workdir, f"{tag}-{args.outtype}.gguf")
    if not args.gguf:
        run([args.pagellm, "convert", model_dir, "--outfile", gguf, "--outtype", args.outtype])
    deq = os.path.join(args.workdir, f"{tag}-deq-{args.outtype}")
    if not os.path.exists(os.path.join(deq, "model.safetensors")):
        run(["/usr/bin/python3", os.path.join(HERE, "gguf_to_hf.py"), gguf, model_dir, deq])
    ids = prompts()[1 if args.prompt == "random" else 0]
    act = {"f32": [], "f16": ["--act-f16"], "bf16": ["--act-bf16"], "q8_0": ["--act-q8_0"]}[args.outtype]
    runs = {
        "llama_fa_auto": lambda: llama_cpp(args, gguf, ids, "auto", "F16"),
        "llama_fa_off": lambda: llama_cpp(args, gguf, ids, "off", "F16"),
        "llama_fa_off_kv_f32": lambda: llama_cpp(args, gguf, ids, "off", "F32"),
        "pagellm_gguf_kv_f16": lambda: pagellm(args, gguf, ids, "auto", "float16"),
        "pagellm_gguf_kv_f32": lambda: pagellm(args, gguf, ids, "auto", "float32"),
        "pagellm_deq_f32_kv_f32": lambda: pagellm(args, deq, ids, "float32", "float32"),
        "ref_plain": lambda: reference(args, deq, ids, []),
        "ref_kv_f16": lambda: reference(args, deq, ids, ["--kv-f16"]),
        "ref_act": lambda: reference(args, deq, ids, act),
        "ref_act_kv_f16": lambda: reference(args, deq, ids, act + ["--kv-f16"]),
        "ref_act_kv_f16_mmf32": lambda: reference(args, deq, ids, act + ["--kv-f16", "--matmul-f32"]),
        "ref_plain_mmf32": lambda: reference(args, deq, ids, ["--matmul-f32"]),
        "ref_act_mmf32": lambda: reference(args, deq, ids, act + ["--matmul-f32"]),
    }
    names = args.runs.split(",") if args.runs else list(runs)
    results = {n: runs[n]() for n in names}
    print(f"{tag} {args.outtype} prompt={args.prompt} ({len(ids)} tokens): max|dlogprob| / median over "
          "positions (top-1 mismatches)")
    width = max(len(n) for n in names)
    print(" " * width + "".join(f"{i:>20d}" for i in range(len(names))))
    for i, a in enumerate(names):
        cells = []
        for j, b in enumerate(names):
            d, med, t = delta(results[a], results[b]) if j != i else (0.0, 0.0, 0)
            cells.append(f"{d:7.3f}/{med:6.3f} ({t:2d})")
        print(f"{a:>{width}s}" + "".join(f"{c:>20s}" for c in cells) + f"   [{i}]")


if __name__ == "__main__":
    main()
