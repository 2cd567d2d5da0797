#!/usr/bin/python3
"""Independent reference forward pass for Qwen2/Qwen2.5/Qwen3 checkpoints.

Written from the published equations (docs: qwen-architectures.md §2-3), in PyTorch,
in float64 so that it is the "truth" our fp32-accumulating engine is measured against.
It shares no code with pagellm: it parses config.json and safetensors itself.

  qwen_reference.py MODEL_DIR --ids 1,2,3 [--greedy N] --out logits.npy [--act-bf16] [--kv-bf16]
      [--act-f16 | --act-q8_0] [--kv-f16]
  qwen_reference.py MODEL_DIR --jobs jobs.json   (several prompts / recipes, one load)

--act-bf16 rounds the input of every linear layer to bf16 and --kv-bf16 rounds cached
keys/values to bf16: the numerical recipe of a bf16 engine (llama.cpp, vLLM and pagellm
all round there), so that the remaining difference is summation order only.
llama.cpp's recipes (ggml-cpu converts a matmul's activations to the weight type's
vec_dot_type): --act-f16 rounds linear inputs to f16 (F16 weights), --act-q8_0 quantizes
them to q8_0 blocks of 32 as ggml's x86 quantize_row_q8_0 does (Q8_0 weights: fp16 scale
amax/127, values round-half-even(x * 127/amax) in fp32); --kv-f16 rounds cached keys and
values to f16 (llama.cpp's default KV cache type). --matmul-f32 computes the linear layers
in float32 (as the engines do) instead of float64: a twin of any recipe that differs only in
rounding, to measure how much the model amplifies rounding noise (its chaos).

prints JSON {"greedy": [...]} when --greedy is given; writes [T, V] float64 logits.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        data = np.memmap(path, dtype=np.uint8, mode="r")
        for name, info in header.items():
            if name == "__metadata__":
                continue
            a, b = info["data_offsets"]
            raw = np.asarray(data[base + a: base + b])
            arr = raw.view(DTYPES[info["dtype"]]).reshape(info["shape"])
            if info["dtype"] == "BF16":
                arr = (arr.astype(np.uint32) << 16).view(np.float32)
            out[name] = torch.from_numpy(arr.astype(np.float64))
        return out


def load_weights(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    w = {}
    for f in files:
        w.update(read_safetensors(os.path.join(model_dir, f)))
    return w


def inv_freq_and_scale(cfg, rot):
    theta = cfg.get("rope_theta", 10000.0)
    inv = 1.0 / (theta ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    scale = 1.0
    if kind == "linear":
        inv = inv / rs["factor"]
    elif kind == "dynamic":
        # vLLM's static form: base' computed at L = orig * factor, used at all lengths.
        factor = rs["factor"]
        orig = rs.get("original_max_position_embeddings", cfg["max_position_embeddings"])
        L = orig * factor
        base = theta * ((factor * L / orig) - (factor - 1)) ** (rot / (rot - 2))
        inv = 1.0 / (base ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))
    elif kind == "yarn":
        factor = rs["factor"]
        orig = rs.get("original_max_position_embeddings", cfg["max_position_embeddings"])
        beta_fast, beta_slow = rs.get("beta_fast", 32), rs.get("beta_slow", 1)

        def corr(n):
            return rot * math.log(orig / (n * 2 * math.pi)) / (2 * math.log(theta))

        low = max(math.floor(corr(beta_fast)), 0)
        high = min(math.ceil(corr(beta_slow)), rot - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(rot // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
        extrap = 1 - ramp
        inv = (inv / factor) * (1 - extrap) + inv * extrap
        scale = rs.get("attention_factor") or (0.1 * math.log(factor) + 1.0)
    return inv, scale


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps))


def rope(x, pos, inv, scale, rot):
    # x: [T, heads, hd]; NeoX rotate-half over the first `rot` dims.
    ang = pos[:, None].to(torch.float64) * inv[None, :]
    cos = (torch.cos(ang) * scale)[:, None, :]
    sin = (torch.sin(ang) * scale)[:, None, :]
    half = rot // 2
    x1, x2, rest = x[..., :half], x[..., half:rot], x[..., rot:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1)


def bf16(x):
    return x.float().bfloat16().double()


def f16(x):
    return x.float().half().double()


def q8_0(x):
    """x [..., K] -> the values of ggml's q8_0 blocks (K % 32 == 0), computed in fp32 as
    quantize_row_q8_0 does; q * d is exact in fp32, so the float64 product that follows
    equals ggml's integer dot product times d_x."""
    shape = x.shape
    b = x.float().reshape(*shape[:-1], shape[-1] // 32, 32)
    amax = b.abs().amax(-1, keepdim=True)
    d = (amax / 127).half().float()
    inv = torch.where(amax != 0, 127 / amax, torch.zeros_like(amax))
    return (torch.round(b * inv) * d).double().reshape(shape)


ACT_ROUND = {"none": lambda x: x, "bf16": bf16, "f16": f16, "q8_0": q8_0}
KV_ROUND = {"none": lambda x: x, "bf16": bf16, "f16": f16}


def forward(cfg, w, ids, act="none", kv="none", matmul_f32=False, last_only=False):
    act_round, kv_round = ACT_ROUND[act], KV_ROUND[kv]

    def mm(x, weight):
        return (x.float() @ weight.float().T).double() if matmul_f32 else x @ weight.T

    qwen2 = cfg["model_type"] == "qwen2"
    H, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or H // nh
    eps = cfg["rms_norm_eps"]
    rot = int(hd * cfg.get("partial_rotary_factor", 1.0))
    inv, scale = inv_freq_and_scale(cfg, rot)
    T = len(ids)
    pos = torch.arange(T)
    h = w["model.embed_tokens.weight"][torch.tensor(ids)]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)

        def lin(name, inp):
            y = mm(act_round(inp), w[p + name + ".weight"])
            b = w.get(p + name + ".bias")
            return y + b if b is not None else y

        q = lin("self_attn.q_proj", x).view(T, nh, hd)
        k = lin("self_attn.k_proj", x).view(T, nkv, hd)
        v = lin("self_attn.v_proj", x).view(T, nkv, hd)
        if not qwen2:
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k = rope(q, pos, inv, scale, rot), rope(k, pos, inv, scale, rot)
        k, v = kv_round(k), kv_round(v)
        rep = nh // nkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        s = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd) + mask
        a = torch.einsum("hts,shd->thd", torch.softmax(s, dim=-1), v).reshape(T, nh * hd)
        h = h + lin("self_attn.o_proj", a)
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        g = lin("mlp.gate_proj", x)
        h = h + lin("mlp.down_proj", torch.nn.functional.silu(g) * lin("mlp.up_proj", x))
    if last_only:  # greedy steps need the last row's logits only (rows are independent)
        h = h[-1:]
    h = rms_norm(h, w["model.norm.weight"], eps)
    lm = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return mm(act_round(h), lm)


def run_job(cfg, w, ids, greedy_n, out, recipe):
    """Prompt logits to `out` (.npy, when given) and greedy_n greedy tokens."""
    logits = forward(cfg, w, ids, **recipe)
    if out:
        np.save(out, logits.numpy())
    del logits
    greedy = []
    seq = list(ids)
    for _ in range(greedy_n):
        # Full recompute each step: slow but independent of any cache logic.
        nxt = int(forward(cfg, w, seq, last_only=True, **recipe)[-1].argmax())
        greedy.append(nxt)
        seq.append(nxt)
        if len(seq) > 4096:
            break
    return greedy


def recipe_of(act_bf16=False, kv_bf16=False, act_f16=False, act_q8_0=False, kv_f16=False, matmul_f32=False):
    acts = [a for a, on in [("bf16", act_bf16), ("f16", act_f16), ("q8_0", act_q8_0)] if on]
    kvs = [k for k, on in [("bf16", kv_bf16), ("f16", kv_f16)] if on]
    if len(acts) > 1 or len(kvs) > 1:
        sys.exit("at most one --act-* and one --kv-* recipe flag")
    return dict(act=(acts or ["none"])[0], kv=(kvs or ["none"])[0], matmul_f32=matmul_f32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--ids", help="comma-separated prompt token ids")
    ap.add_argument("--jobs", help="JSON file: a list of {ids, greedy, out, recipe: {act_bf16: true, ...}}, run "
                                   "with one load of the weights; prints a list of greedy token lists")
    ap.add_argument("--greedy", type=int, default=0, help="also decode N greedy tokens")
    ap.add_argument("--out", help="write prompt logits [T, V] as .npy (float64)")
    ap.add_argument("--act-bf16", action="store_true", help="round linear-layer inputs to bf16")
    ap.add_argument("--kv-bf16", action="store_true", help="round cached keys/values to bf16")
    ap.add_argument("--act-f16", action="store_true", help="round linear-layer inputs to f16 (ggml F16 weights)")
    ap.add_argument("--act-q8_0", action="store_true", help="quantize linear-layer inputs to q8_0 blocks (ggml Q8_0)")
    ap.add_argument("--kv-f16", action="store_true", help="round cached keys/values to f16 (llama.cpp's KV cache)")
    ap.add_argument("--matmul-f32", action="store_true", help="linear layers in float32 (a rounding-noise twin)")
    args = ap.parse_args()
    if (args.ids is None) == (args.jobs is None):
        sys.exit("give --ids or --jobs")
    cfg = json.load(open(os.path.join(args.model_dir, "config.json")))
    w = load_weights(args.model_dir)
    with torch.no_grad():
        if args.jobs:
            results = []
            for job in json.load(open(args.jobs)):
                results.append(run_job(cfg, w, [int(t) for t in job["ids"]], job.get("greedy", 0), job.get("out"),
                                       recipe_of(**job.get("recipe", {}))))
            json.dump(results, sys.stdout)
            return
        recipe = recipe_of(args.act_bf16, args.kv_bf16, args.act_f16, args.act_q8_0, args.kv_f16, args.matmul_f32)
        greedy = run_job(cfg, w, [int(t) for t in args.ids.split(",")], args.greedy, args.out, recipe)
    json.dump({"greedy": greedy}, sys.stdout)


if __name__ == "__main__":
    main()
