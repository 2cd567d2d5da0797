#!/usr/bin/python3
"""Golden test: pagellm's logits and greedy tokens against qwen_reference.py.

For each case it makes a dummy checkpoint with `pagellm make-dummy-model`, optionally
edits config.json (RoPE scaling variants), then compares on several prompts:
  * logits at every prompt position: max |Δ| relative to the logit scale, and top-1
    agreement wherever the reference's top-1/top-2 margin exceeds the noise floor;
  * N greedy tokens from `pagellm generate` against the reference's greedy decode.
Tolerances are stated below; the measured numbers are printed for the record.

  compare_with_reference.py PAGELLM_BIN WORK_DIR [--cases qwen3-tiny,qwen2-tiny]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from logits import LogitStats  # noqa: E402  (tests/support/logits.py)

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "qwen_reference.py")

# (name, preset, dtype, config edits)
CASES = {
    "qwen3-tiny-bf16": ("qwen3-tiny", "bf16", {}),
    "qwen3-tiny-f32": ("qwen3-tiny", "f32", {}),
    "qwen2-tiny-bf16": ("qwen2-tiny", "bf16", {}),
    "qwen2-tiny-f16": ("qwen2-tiny", "f16", {}),
    "qwen3-tiny-yarn": ("qwen3-tiny", "bf16",
                        {"rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                          "original_max_position_embeddings": 64}}),
    "qwen2-tiny-linear": ("qwen2-tiny", "bf16", {"rope_scaling": {"type": "linear", "factor": 2.0}}),
    "qwen3-tiny-dynamic": ("qwen3-tiny", "bf16",
                           {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}),
}

# The reference is float64 on the same (exactly upcast) weights, run with the numerical
# recipe of the engine for that weight dtype on this CPU, so the difference is summation
# order:
#   f32 weights: fp32 activations, f32 KV cache (we pass --kv-cache-dtype float32);
#   f16 weights: fp32 activations, bf16 KV cache (the default);
#   bf16 weights: bf16 KV cache; linear inputs rounded to bf16 where the engine's bf16
#     kernels are vdpbf16ps / AMX (AVX-512 BF16, PAGELLM_ISA not avx2), kept in fp32 by the
#     AVX2 kernels (which widen the weights and use fp32 FMAs: bf16_packed.h).
# MAX_REL_ERR bounds max |Δlogit| / max|logit| against that reference; real math errors
# (a wrong RoPE pairing, a missing norm, a bias) show up at 1e-1 and above.
# EXACT_REL_ERR bounds the distance to the plain float64 reference (no rounding at all):
# what the bf16 recipe itself costs on these weights.
# With fp32 activations (the AVX2 bf16 recipe) only the KV cache is rounded: measured
# <= 1.9e-3 on an AVX2-only Zen 3 (7 cases), bounded like f16 weights.
MAX_REL_ERR = {"f32": 1e-4, "bf16": 2e-2, "bf16-fp32-activations": 5e-3, "f16": 5e-3}
EXACT_REL_ERR = {"f32": 1e-4, "bf16": 6e-2, "f16": 2e-2}


def engine_rounds_bf16_activations():
    """Whether pagellm's bf16 matmuls round their input to bf16 here: the AVX-512 BF16
    kernels do, the AVX2 ones do not. Mirrors DetectCpuIsa() (src/backend/cpu/cpu_isa.cc)."""
    has = all(cpu_has_flag(f) for f in ("avx512f", "avx512bw", "avx512vl", "avx512_bf16"))
    return has and os.environ.get("PAGELLM_ISA", "") != "avx2"


def recipe(dtype):
    if dtype == "f32":
        return []
    if dtype == "bf16" and engine_rounds_bf16_activations():
        return ["--act-bf16", "--kv-bf16"]
    return ["--kv-bf16"]


GREEDY_TOKENS = 32


def run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if res.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{res.stderr}")
    return res.stdout


def prompts(vocab):
    rng = np.random.default_rng(1234)
    return [
        [151644, 872, 198, 9707, 11, 1879, 0, 151645, 198],  # a chat-like prompt
        [int(t) for t in rng.integers(0, 151643, size=7)],
        [int(t) for t in rng.integers(0, 151643, size=300)],  # long: RoPE at large positions
        [42],
    ]


def check_case(pagellm, work, name, preset, dtype, edits):
    model = os.path.join(work, name)
    if not os.path.exists(os.path.join(model, "config.json")):
        run([pagellm, "make-dummy-model", "--preset", preset, "--dtype", dtype, "--out", model, "--seed", "7"])
        if edits:
            cfg = json.load(open(os.path.join(model, "config.json")))
            cfg.update(edits)
            json.dump(cfg, open(os.path.join(model, "config.json"), "w"), indent=2)
    failures = []
    kv_dtype = "float32" if dtype == "f32" else "auto"
    flags = {"--act-bf16": "act_bf16", "--kv-bf16": "kv_bf16"}
    # One reference process for the whole case (torch and the weights load once): per prompt
    # the engine's recipe with its greedy tokens and, where the recipe rounds, the exact run.
    jobs, paths = [], []
    for i, ids in enumerate(prompts(None)):
        ours_path = os.path.join(work, f"{name}-{i}-ours.npy")
        ref_path = os.path.join(work, f"{name}-{i}-ref.npy")
        exact_path = os.path.join(work, f"{name}-{i}-exact.npy") if recipe(dtype) else None
        run([pagellm, "logits", "--model", model, "--prompt-ids", ",".join(map(str, ids)), "--out", ours_path,
             "--kv-cache-dtype", kv_dtype])
        greedy_n = GREEDY_TOKENS if len(ids) < 100 else 0
        jobs.append({"ids": ids, "greedy": greedy_n, "out": ref_path, "recipe": {flags[f]: True for f in recipe(dtype)}})
        if exact_path:
            jobs.append({"ids": ids, "greedy": 0, "out": exact_path})
        paths.append((ours_path, ref_path, exact_path, len(jobs) - (2 if exact_path else 1)))
    jobs_path = os.path.join(work, f"{name}-jobs.json")
    json.dump(jobs, open(jobs_path, "w"))
    greedies = json.loads(run([REFERENCE, model, "--jobs", jobs_path]))
    for i, ids in enumerate(prompts(None)):
        ids_arg = ",".join(map(str, ids))
        ours_path, ref_path, exact_path, job = paths[i]
        greedy_n = jobs[job]["greedy"]
        ref = {"greedy": greedies[job]}
        stats = LogitStats(ours_path, ref_path, exact_path)
        # The arrays are [T, vocab] float64 (~350 MB for the 300-token prompt): drop them once
        # read, so a full suite does not leave gigabytes behind (PAGELLM_KEEP_GOLDEN=1 keeps them).
        for path in (ours_path, ref_path, exact_path):
            if path and os.path.exists(path) and not os.environ.get("PAGELLM_KEEP_GOLDEN"):
                os.remove(path)
        if not stats.same_shape:
            failures.append(f"{name}#{i}: shape {stats.shapes[0]} vs {stats.shapes[1]} (or the exact reference's)")
            continue
        exact_rel = stats.exact_rel
        if exact_path and exact_rel > EXACT_REL_ERR[dtype]:
            failures.append(f"{name}#{i}: distance to the exact reference {exact_rel:.2e} > {EXACT_REL_ERR[dtype]}")
        scale, rel, margin, agree = stats.scale, stats.rel, stats.margin, stats.agree
        decisive = margin > 50 * rel * scale + 1e-6
        print(f"{name} prompt#{i} T={len(ids)}: max|Δ|/scale={rel:.2e} (exact {exact_rel:.2e}) logit-scale={scale:.1f} "
              f"median-margin={np.median(margin):.2f} top1-agree={agree.mean():.3f}")
        fp32_act = dtype == "bf16" and not engine_rounds_bf16_activations()
        bound = MAX_REL_ERR["bf16-fp32-activations" if fp32_act else dtype]
        if rel > bound:
            failures.append(f"{name}#{i}: max relative logit error {rel:.2e} > {bound}")
        if not agree[decisive].all():
            failures.append(f"{name}#{i}: top-1 differs at positions {np.where(~agree & decisive)[0][:10]}")
        if greedy_n:
            out = json.loads(run([pagellm, "generate", "--model", model, "--prompt-ids", ids_arg,
                                  "--temperature", "0", "--ignore-eos", "--max-tokens", str(greedy_n),
                                  "--output-format", "json", "--kv-cache-dtype", kv_dtype]))
            if out["token_ids"] != ref["greedy"]:
                failures.append(f"{name}#{i}: greedy differs\n  ours {out['token_ids']}\n  ref  {ref['greedy']}")
    return failures


def cpu_has_flag(flag):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    from cpuinfo import cpu_has_flag as has_flag  # tests/support/cpuinfo.py
    return has_flag(flag)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pagellm")
    ap.add_argument("work")
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    isa = os.environ.get("PAGELLM_ISA") or "auto"
    print(f"golden: PAGELLM_ISA={isa}, bf16 recipe: {' '.join(recipe('bf16'))}")
    os.makedirs(args.work, exist_ok=True)
    failures = []
    for name in args.cases.split(","):
        failures += check_case(args.pagellm, args.work, name, *CASES[name])
    for f in failures:
        print("FAIL", f)
    print(f"golden: {len(args.cases.split(','))} cases, {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
