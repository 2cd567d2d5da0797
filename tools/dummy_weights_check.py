#!/usr/bin/env python3
"""Checks that dummy checkpoints behave like trained models numerically.

Loads a model directory written by `pagellm make-dummy-model` (config.json +
model.safetensors or shards) with its own safetensors parser, runs a plain fp32
PyTorch forward pass of Qwen2/Qwen3 (docs/qwen-architectures.md §2-3: RMSNorm,
q/k/v (+bias), per-head q/k RMSNorm for Qwen3, NeoX RoPE, causal GQA, SwiGLU, tied or
separate lm_head) on a few seeded random prompts and prints:

  margin   median top-1 minus top-2 logit over all positions (want >= 1.0) and the
           fraction of positions with a margin below 0.5 / 0.1 (near-ties that rounding
           noise could flip),
  std      logits std over the vocabulary,
  rms      residual-stream RMS after the embedding and after each sixth of the layers,
  attn     mean attention entropy of the last query divided by log(T) (1 = uniform),
  context  distinct top-1 predictions for prompts that share their last token (the
           prediction must depend on the context, not only on the last token),
  echo     positions whose top-1 is the input token itself (degenerate copying).

Usage (Debian's python3 has torch):
  /usr/bin/python3 tools/dummy_weights_check.py /tmp/qwen3-tiny [/tmp/qwen2-tiny ...]
Exit code 1 if any model's median margin is below --min-margin (default 1.0).
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}


def read_safetensors(path):
    """Returns {name: float32 tensor} for one .safetensors file."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = np.frombuffer(data[begin:end], dtype=DTYPES[info["dtype"]])
        if info["dtype"] == "BF16":
            t = torch.from_numpy((raw.astype(np.uint32) << 16).view(np.float32).copy())
        else:
            t = torch.from_numpy(raw.astype(np.float32))
        out[name] = t.reshape(info["shape"])
    return out


def load_dir(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    weights = {}
    for f in files:
        weights.update(read_safetensors(os.path.join(model_dir, f)))
    return weights


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rope(x, theta):  # x [T, n, hd]: rotate-half NeoX RoPE at positions 0..T-1
    T, hd = x.shape[0], x.shape[-1]
    inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = (torch.arange(T, dtype=torch.float64)[:, None] * inv[None]).float()
    cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None]
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def attention(cfg, W, p, x, stats):
    T = x.shape[0]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // nh
    qwen3 = cfg["model_type"] == "qwen3"
    q, k, v = (x @ W[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
    if not qwen3 or cfg.get("attention_bias"):
        q, k, v = (t + W[p + f"self_attn.{n}_proj.bias"] for t, n in zip((q, k, v), "qkv"))
    q, k, v = q.view(T, nh, hd), k.view(T, nkv, hd), v.view(T, nkv, hd)
    if qwen3:
        q = rms_norm(q, W[p + "self_attn.q_norm.weight"], cfg["rms_norm_eps"])
        k = rms_norm(k, W[p + "self_attn.k_norm.weight"], cfg["rms_norm_eps"])
    q, k = rope(q, cfg["rope_theta"]), rope(k, cfg["rope_theta"])
    k, v = k.repeat_interleave(nh // nkv, 1), v.repeat_interleave(nh // nkv, 1)
    s = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd)
    s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    prob = s.softmax(-1)
    ent = -(prob[:, -1] * prob[:, -1].clamp_min(1e-30).log()).sum(-1).mean().item()
    stats["attn"].append(ent / math.log(T))
    o = torch.einsum("hts,shd->thd", prob, v).reshape(T, nh * hd) @ W[p + "self_attn.o_proj.weight"].T
    if qwen3 and cfg.get("attention_bias"):
        o = o + W[p + "self_attn.o_proj.bias"]
    return o


def forward(cfg, W, ids, stats):
    eps = cfg["rms_norm_eps"]
    h = W["model.embed_tokens.weight"][ids]
    stats["rms"] = [h.pow(2).mean().sqrt().item()]
    stats["attn"] = []
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = h + attention(cfg, W, p, rms_norm(h, W[p + "input_layernorm.weight"], eps), stats)
        x = rms_norm(h, W[p + "post_attention_layernorm.weight"], eps)
        gate = torch.nn.functional.silu(x @ W[p + "mlp.gate_proj.weight"].T)
        h = h + (gate * (x @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
        stats["rms"].append(h.pow(2).mean().sqrt().item())
    lm_head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else W["lm_head.weight"]
    return rms_norm(h, W["model.norm.weight"], eps) @ lm_head.T


def check(model_dir, num_prompts, prompt_len, seed):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    W = load_dir(model_dir)
    gen = torch.Generator().manual_seed(seed)
    margins, stds, last_top1, echo, stats = [], [], [], 0, {}
    for _ in range(num_prompts):
        ids = torch.randint(0, 151643, (prompt_len,), generator=gen)
        ids[-1] = 785  # shared last token: the prediction must still vary with context
        logits = forward(cfg, W, ids, stats)
        top2 = logits.topk(2, -1).values
        margins += (top2[:, 0] - top2[:, 1]).tolist()
        stds.append(logits.std(-1).mean().item())
        top1 = logits.argmax(-1)
        last_top1.append(top1[-1].item())
        echo += int((top1 == ids).sum())
    m = torch.tensor(margins)
    L = cfg["num_hidden_layers"]
    step = max(1, L // 6)
    median = m.median().item()
    print(f"{os.path.basename(model_dir.rstrip('/'))}: margin median {median:.2f} "
          f"(<0.5: {(m < 0.5).float().mean():.1%}, <0.1: {(m < 0.1).float().mean():.1%}) "
          f"std {sum(stds) / len(stds):.2f} "
          f"rms {[round(r, 2) for r in stats['rms'][::step] + stats['rms'][-1:]]} "
          f"attn {[round(e, 2) for e in stats['attn'][::step]]} "
          f"context {len(set(last_top1))}/{num_prompts} echo {echo}/{len(margins)}")
    return median


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dirs", nargs="+")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--len", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-margin", type=float, default=1.0)
    args = ap.parse_args()
    torch.set_num_threads(2)
    ok = True
    for d in args.model_dirs:
        ok &= check(d, args.prompts, args.len, args.seed) >= args.min_margin
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
