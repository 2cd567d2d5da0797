#!/usr/bin/python3
"""Writes a Hugging Face checkpoint (F32 safetensors) holding a Qwen2/Qwen3 GGUF's weights
exactly dequantized, read with llama.cpp's own gguf-py: the weights llama.cpp computes
with, in a form the float64 reference (tests/golden/qwen_reference.py) and pagellm's
safetensors path read. Config and tokenizer files are copied from the original checkpoint.

  /usr/bin/python3 tests/parity/gguf_to_hf.py MODEL.gguf ORIG_HF_DIR OUT_DIR [--gguf-py DIR]

gguf-py comes from --gguf-py, else /work/llama.cpp-src/gguf-py when present, else the git
bundle node-llama-cpp ships (extracted as tests/gguf/check_with_gguf_py.py does).
"""
import argparse
import json
import os
import re
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLE = os.path.join(HERE, "..", "..", ".refs", "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle")

# llama.cpp tensor names -> Hugging Face names (Qwen2/Qwen3 dense; no Q/K permutation).
GLOBAL = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
          "output.weight": "lm_head.weight"}
BLOCK = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
         "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
         "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
         "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def import_gguf_py(explicit, workdir):
    for cand in [explicit, "/work/llama.cpp-src/gguf-py"]:
        if cand and os.path.isdir(os.path.join(cand, "gguf")):
            sys.path.insert(0, cand)
            return
    sys.path.insert(0, os.path.join(HERE, "..", "gguf"))
    from check_with_gguf_py import extract_gguf_py  # noqa: E402
    extract_gguf_py(BUNDLE, workdir)


def hf_name(name):
    if name in GLOBAL:
        return GLOBAL[name]
    m = re.fullmatch(r"blk\.(\d+)\.([a-z_]+)\.(weight|bias)", name)
    if not m or m.group(2) not in BLOCK:
        raise ValueError(f"unmapped GGUF tensor {name}")
    return f"model.layers.{m.group(1)}.{BLOCK[m.group(2)]}.{m.group(3)}"


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, arr in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for arr in tensors.values():
            f.write(np.ascontiguousarray(arr, dtype="<f4").tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf")
    ap.add_argument("orig_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--gguf-py")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    import_gguf_py(args.gguf_py, args.out_dir)
    from gguf import GGUFReader, quants  # noqa: E402

    tensors = {}
    for t in GGUFReader(args.gguf).tensors:
        # t.shape is ggml order (ne0 first); rows are the reversed shape.
        shape = [int(d) for d in reversed(t.shape)]
        arr = quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32).reshape(shape)
        tensors[hf_name(t.name)] = arr
    write_safetensors(os.path.join(args.out_dir, "model.safetensors"), tensors)
    for f in os.listdir(args.orig_dir):
        if f.endswith(".json") and not f.startswith("model.safetensors"):
            shutil.copy(os.path.join(args.orig_dir, f), args.out_dir)
    cfg_path = os.path.join(args.out_dir, "config.json")
    cfg = json.load(open(cfg_path))
    cfg["torch_dtype"] = "float32"
    cfg["tie_word_embeddings"] = "lm_head.weight" not in tensors
    json.dump(cfg, open(cfg_path, "w"), indent=2)
    print(json.dumps({"tensors": len(tensors), "out": args.out_dir}))


if __name__ == "__main__":
    main()
