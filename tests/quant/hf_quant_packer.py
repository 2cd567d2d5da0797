#!/usr/bin/python3
"""Reference packer: a float Hugging Face Qwen checkpoint -> a quantized checkpoint in one of
the published Hugging Face layouts, plus the same model with the quantized weights
dequantized to float32 (the values the quantized checkpoint encodes), for end-to-end
fidelity tests.

  hf_quant_packer.py --in DIR --format awq|gptq|ct-w4a16 --group-size G [--sym] [--act-order]
                     --out QDIR --dequantized-out FDIR [--self-check]
  hf_quant_packer.py --in DIR --format ct-w8a8|ct-w8a16|gptq-int8|ascend-w8a8-dynamic
                     --out QDIR --dequantized-out FDIR [--self-check]
  hf_quant_packer.py --in DIR --format fp8 [--block-size 128] [--scale-dtype f32|bf16] ...

The int4 formats are below; the 8-bit ones (int8 per channel, fp8 e4m3) are in
hf_quant_packer8.py, with their sources.

Written from the formats as the tools that produce them write them (read, not copied; the
commits are those of the snapshots read):

  awq       AutoAWQ, version "gemm" (casper-hansen/AutoAWQ):
            * awq/quantize/quantizer.py, pseudo_quantize_tensor (zero_point=True):
              per group of G input columns, scale = max(max - min, 1e-5) / 15,
              zero = clamp(-round(min / scale), 0, 15), q = clamp(round(w / scale) + zero, 0, 15).
            * awq/modules/linear/gemm.py, WQLinear_GEMM.from_linear: scales stored fp16
              [K/G, N] (scales.t()), codes recomputed against the fp16 scales;
              qweight int32 [K, N/8] with nibble i (bits 4i..4i+3) of qweight[k, c] = code of
              output column 8c + order[i], order = [0, 2, 4, 6, 1, 3, 5, 7]; qzeros int32
              [K/G, N/8] packed with the same order; P.weight removed, bias kept.
            * awq/models/_config.py, AwqConfig.to_transformers_dict: the config.json entry
              {quant_method, zero_point, group_size, bits, version: "gemm",
              modules_to_not_convert}. (AutoAWQ also casts bias to fp16; we keep biases
              in the model dtype so the dequantized twin carries the very same values.)
            * AutoAWQ asserts K % G == 0; so do we.
  gptq      AutoGPTQ, checkpoint_format "gptq" (v1) (AutoGPTQ/AutoGPTQ):
            * auto_gptq/quantization/quantizer.py, Quantizer.find_params (mse off):
              xmin = min(min(w), 0), xmax = max(max(w), 0); sym: xmax = max(|xmin|, xmax),
              xmin = -xmax (when xmin < 0); all-zero -> [-1, 1]; scale = (xmax - xmin) / 15;
              zero = 8 (sym: (maxq + 1) / 2) or round(-xmin / scale);
              q = clamp(round(w / scale) + zero, 0, 15).
            * auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py, QuantLinear.__init__ / pack:
              qweight int32 [K/8, N], nibble j of qweight[i, n] = code of input row
              k = 8i + j; qzeros int32 [ceil(K/G), N/8], nibble j of qzeros[g, c] = zero of
              column 8c + j, stored as zero - 1 (v1); scales [ceil(K/G), N] in the weight
              dtype (fp16 in practice: we store fp16); g_idx int32 [K] = k // G; group_size
              -1 means G = K. The real pack computes `zeros - 1` in uint32 and ORs it in
              unmasked, so a zero of 0 (all of a group's weights >= -scale/2) would spill
              0xF into the higher nibbles; vLLM's kernels add the 1 back to the 4-bit
              field, so zero 0 cannot be stored in v1 at all. We never emit it: an
              asymmetric zero of 0 is raised to 1 (codes recomputed), which costs at most
              one step at the group's low end. (Random weights hit it with probability
              ~1e-10 per group.)
            * auto_gptq/quantization/config.py, BaseQuantizeConfig.to_dict, and
              auto_gptq/modeling/_base.py, save_quantized: config.json's
              quantization_config = to_dict() (bits, group_size, damp_percent, desc_act,
              static_groups, sym, true_sequential, model_name_or_path,
              model_file_base_name, quant_method, checkpoint_format), also written as
              quantize_config.json; safetensors metadata {"format": "pt", gptq_*}.
            * vLLM (model_executor/layers/quantization/gptq.py) requires K % G == 0; we do too.
  ct-w4a16  compressed-tensors "pack-quantized" as llm-compressor writes W4A16
            (neuralmagic/compressed-tensors):
            * src/compressed_tensors/quantization/utils/helpers.py, calculate_qparams
              (symmetric int): min/max widened to include 0, scale = max(|min|, |max|) /
              (15 / 2) (bit range of int4 is 15: note 7.5, not 7), clamped to fp32 eps;
              q = clamp(round(w / scale), -8, 7).
            * src/compressed_tensors/compressors/quantized_compressors/pack_quantized.py,
              compress_weight / pack_to_int32: weight_packed int32 [N, ceil(K/8)], nibble j
              of [n, c] = q[n, 8c + j] + 8 (offset to unsigned); weight_shape = tensor of
              the weight's shape (int64 [2]); weight_scale [N, K/G] in the module's dtype;
              no weight_zero_point when symmetric.
            * src/compressed_tensors/quantization/quant_config.py / quant_args.py /
              quant_scheme.py: the config_groups / QuantizationArgs fields below; MoE
              routers are ignored with "re:.*mlp.gate$" as llm-compressor's MoE examples do.
            * Scales: the real tool stores the fp32 scale rounded to the model dtype (bf16
              here). We round it to fp16 first and then to the model dtype, so the stored
              value is also exactly an fp16 value (a bf16 value inside fp16's range always
              is): whatever precision the engine keeps scales in, it sees the same number,
              and the dequantized twin matches it exactly.
  --act-order (gptq, ct-w4a16; a positive group size): GPTQ's desc_act, as AutoGPTQ's
            fasterquant (auto_gptq/quantization/gptq.py) and llm-compressor's actorder
            "group" lay it out: the columns are quantized in an order perm (GPTQ: by
            decreasing Hessian diagonal; here a random permutation, seeded by the module
            name), groups being runs of G in that order, then stored back in input order
            with g_idx[perm[i]] = i // G (gptq: P.g_idx, config desc_act true;
            ct-w4a16: P.weight_g_idx, config actorder "group"). The dequantized twin is
            (q[n, k] - zero[n, g_idx[k]]) * scale[n, g_idx[k]].
  both GPTQ and AWQ: fp16 scales; the dequantized weight is (q - zero) * scale computed in
  float32 from the stored scale, which is exact (an at most 5-bit integer times an 11-bit
  significand), so FDIR holds precisely the function QDIR encodes.

Quantized: every q/k/v/o projection of model.layers.*.self_attn and every gate/up/down
projection of model.layers.*.mlp, MoE experts (mlp.experts.E.*) and shared experts
(mlp.shared_expert.*) included. Kept float: embeddings, lm_head, norms, the MoE router
mlp.gate, shared_expert_gate, everything else.

The safetensors reader/writer is our own (NumPy only, safetensors_io.py).
"""
import argparse
import json
import os
import re
import shutil
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_quant_packer8  # noqa: E402
from safetensors_io import Tensor, from_f32, read_checkpoint, write_safetensors  # noqa: E402

# ---------------------------------------------------------------------------------------
# nibble packing

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]
IDENTITY_ORDER = list(range(8))


def pack_last_axis(codes, order=IDENTITY_ORDER):
    """codes int [R, C] (values 0..15), C % 8 == 0 -> int32 [R, C/8]; nibble i of word c
    holds codes[:, 8c + order[i]]."""
    codes = np.asarray(codes, dtype=np.int64)
    r, c = codes.shape
    assert c % 8 == 0, codes.shape
    assert codes.min() >= 0 and codes.max() <= 15
    g = codes.reshape(r, c // 8, 8).astype(np.uint32)
    word = np.zeros((r, c // 8), dtype=np.uint32)
    for i, src in enumerate(order):
        word |= g[:, :, src] << np.uint32(4 * i)
    return word.view(np.int32)


def unpack_last_axis(words, order=IDENTITY_ORDER):
    """Inverse of pack_last_axis: int32 [R, C/8] -> int64 [R, C]."""
    u = np.asarray(words, dtype=np.int32).view(np.uint32)
    r, c8 = u.shape
    out = np.zeros((r, c8, 8), dtype=np.int64)
    for i, dst in enumerate(order):
        out[:, :, dst] = (u >> np.uint32(4 * i)) & np.uint32(0xF)
    return out.reshape(r, c8 * 8)


def pack_first_axis(codes):
    """codes int [R, C], R % 8 == 0 -> int32 [R/8, C]; nibble j of [i, c] = codes[8i + j, c]."""
    return pack_last_axis(np.asarray(codes).T).T.copy()


def unpack_first_axis(words):
    return unpack_last_axis(np.asarray(words).T).T.copy()


# ---------------------------------------------------------------------------------------
# quantizers: w float32 [N, K] -> (codes int [N, K] 0..15, zeros int [N, ngroups],
# stored scales (dtype tag, float32 values) [N, ngroups]); dequant = (codes - zeros) * scale


def _grouped(w, group):
    n, k = w.shape
    if k % group != 0:
        raise ValueError(f"input size {k} is not a multiple of group size {group}")
    return w.reshape(n, k // group, group)


def _codes(wg, scale, zero, lo, hi):
    return np.clip(np.round(wg / scale[:, :, None]) + zero[:, :, None], lo, hi)


def quantize_awq(w, group):
    wg = _grouped(w, group)
    wmax, wmin = wg.max(axis=2), wg.min(axis=2)
    scale = np.maximum(wmax - wmin, 1e-5) / 15.0
    zero = np.clip(-np.round(wmin / scale), 0, 15)
    s16 = scale.astype(np.float16).astype(np.float32)  # stored fp16; codes use it
    codes = _codes(wg, s16, zero, 0, 15)
    return codes.reshape(w.shape).astype(np.int64), zero.astype(np.int64), s16


def quantize_gptq(w, group, sym, v1=True):
    wg = _grouped(w, group)
    xmin = np.minimum(wg.min(axis=2), 0.0)
    xmax = np.maximum(wg.max(axis=2), 0.0)
    if sym:
        xmax = np.maximum(np.abs(xmin), xmax)
        xmin = np.where(xmin < 0, -xmax, xmin)
    both_zero = (xmin == 0) & (xmax == 0)
    xmin = np.where(both_zero, -1.0, xmin)
    xmax = np.where(both_zero, 1.0, xmax)
    scale = (xmax - xmin) / 15.0
    s16 = scale.astype(np.float16).astype(np.float32)
    if sym:
        zero = np.full(scale.shape, 8.0)
    else:
        zero = np.round(-xmin / scale)
        if v1:
            zero = np.maximum(zero, 1.0)  # see the header: v1 cannot store a zero of 0
    codes = _codes(wg, s16, zero, 0, 15)
    return codes.reshape(w.shape).astype(np.int64), zero.astype(np.int64), s16


def quantize_ct_sym(w, group, scale_dtype):
    wg = _grouped(w, group)
    wmin = np.minimum(wg.min(axis=2), 0.0)
    wmax = np.maximum(wg.max(axis=2), 0.0)
    scale = np.maximum(np.maximum(np.abs(wmin), np.abs(wmax)) / 7.5, np.finfo(np.float32).eps)
    # fp32 -> fp16 -> the model dtype: exactly representable in both (see the header).
    stored = from_f32(scale_dtype, scale.astype(np.float16).astype(np.float32))
    s = stored.to_f32()
    signed = _codes(wg, s, np.zeros(s.shape), -8, 7)
    codes = signed.reshape(w.shape).astype(np.int64) + 8  # unsigned storage, zero 8
    return codes, np.full(s.shape, 8, dtype=np.int64), s, stored


def dequantize(codes, zeros, scales, group):
    """(codes - zero) * scale in float32, [N, K]."""
    n, k = codes.shape
    cg = codes.reshape(n, k // group, group).astype(np.float32)
    return ((cg - zeros[:, :, None].astype(np.float32)) * scales[:, :, None].astype(np.float32)
            ).reshape(n, k).astype(np.float32)


def dequantize_g_idx(codes, zeros, scales, g_idx):
    """(codes[n, k] - zero[n, g_idx[k]]) * scale[n, g_idx[k]] in float32, [N, K]."""
    return ((codes.astype(np.float32) - zeros[:, g_idx].astype(np.float32))
            * scales[:, g_idx].astype(np.float32)).astype(np.float32)


def act_order_perm(k, prefix):
    """The order desc_act quantizes the K input columns in (a seeded random permutation)."""
    return np.random.default_rng(zlib.crc32(prefix.encode())).permutation(k)


def quantize_in_order(quantize, w, group, perm):
    """quantize(w[:, perm], group) with the codes put back in input order, and g_idx:
    (codes [N, K], zeros, scales, ..., g_idx int32 [K]) with g_idx[perm[i]] = i // group."""
    out = list(quantize(w[:, perm], group))
    codes = np.empty_like(out[0])
    codes[:, perm] = out[0]
    g_idx = np.empty(w.shape[1], dtype=np.int32)
    g_idx[perm] = np.arange(w.shape[1]) // group
    return (codes, *out[1:], g_idx)


# ---------------------------------------------------------------------------------------
# the checkpoint

QUANTIZED_RE = re.compile(
    r"^(model\.layers\.\d+\.(?:self_attn\.[qkvo]_proj"
    r"|mlp\.(?:experts\.\d+\.|shared_expert\.)?(?:gate|up|down)_proj))\.weight$")
MOE_ROUTER_RE = re.compile(r"^model\.layers\.\d+\.mlp\.gate\.weight$")


def quantized_modules(tensors):
    return sorted(m.group(1) for m in map(QUANTIZED_RE.match, tensors) if m)


def quant_config_for(fmt, group, sym, is_moe, scale_dtype_name, act_order=False):
    if fmt == "awq":
        return {"quant_method": "awq", "zero_point": True, "group_size": group, "bits": 4,
                "version": "gemm",
                # AutoAWQ's Qwen3-MoE class lists nothing; we keep the router float and say
                # so with a name both vLLM's substring test and whole-component matching
                # read as the router only ("gate" alone would also hit gate_proj in vLLM).
                "modules_to_not_convert": ["mlp.gate"] if is_moe else None}
    if fmt == "gptq":
        return {"bits": 4, "group_size": group, "damp_percent": 0.01, "desc_act": bool(act_order),
                "static_groups": False, "sym": bool(sym), "true_sequential": True,
                "model_name_or_path": None, "model_file_base_name": "model",
                "quant_method": "gptq", "checkpoint_format": "gptq"}
    if fmt == "ct-w4a16":
        ignore = ["lm_head"] + (["re:.*mlp.gate$"] if is_moe else [])
        return {
            "config_groups": {"group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                            "group_size": group, "block_structure": None, "dynamic": False,
                            "actorder": "group" if act_order else None, "observer": "minmax",
                            "observer_kwargs": {}},
                "input_activations": None, "output_activations": None,
                "format": "pack-quantized"}},
            "quant_method": "compressed-tensors", "kv_cache_scheme": None,
            "format": "pack-quantized", "quantization_status": "compressed",
            "global_compression_ratio": None, "ignore": ignore, "sparsity_config": {}}
    raise ValueError(fmt)


def pack_module(fmt, w, group, sym, model_dtype, act_order_perm_=None):
    """w float32 [N, K] -> ({suffix: Tensor}, dequantized float32 [N, K]); act_order_perm_:
    the order desc_act quantizes the columns in (gptq, ct-w4a16), None for input order."""
    n, k = w.shape
    if n % 8 != 0:
        raise ValueError(f"output size {n} is not a multiple of 8")
    g = k if group == -1 else group
    perm = np.arange(k) if act_order_perm_ is None else act_order_perm_
    if fmt == "awq":
        if k % 8 != 0:
            raise ValueError(f"input size {k} is not a multiple of 8")
        codes, zeros, s = quantize_awq(w, g)
        out = {"qweight": Tensor("I32", pack_last_axis(codes.T, AWQ_ORDER)),
               "qzeros": Tensor("I32", pack_last_axis(zeros.T, AWQ_ORDER)),
               "scales": Tensor("F16", s.T.astype(np.float16))}
    elif fmt == "gptq":
        if k % 8 != 0:
            raise ValueError(f"input size {k} is not a multiple of 8")
        codes, zeros, s, g_idx = quantize_in_order(lambda wp, gs: quantize_gptq(wp, gs, sym), w, g, perm)
        out = {"qweight": Tensor("I32", pack_first_axis(codes.T)),
               "qzeros": Tensor("I32", pack_last_axis((zeros.T - 1) & 0xF)),  # v1: zero - 1
               "scales": Tensor("F16", s.T.astype(np.float16)),
               "g_idx": Tensor("I32", g_idx)}
    elif fmt == "ct-w4a16":
        if k % 8 != 0:
            raise ValueError(f"input size {k} is not a multiple of 8")
        codes, zeros, s, stored, g_idx = quantize_in_order(
            lambda wp, gs: quantize_ct_sym(wp, gs, model_dtype), w, g, perm)
        out = {"weight_packed": Tensor("I32", pack_last_axis(codes)),
               "weight_scale": stored,
               "weight_shape": Tensor("I64", np.array([n, k], dtype=np.int64))}
        if act_order_perm_ is not None:
            out["weight_g_idx"] = Tensor("I32", g_idx)
    else:
        raise ValueError(fmt)
    if fmt == "awq":
        return out, dequantize(codes, zeros, s, g)
    return out, dequantize_g_idx(codes, zeros, s, g_idx)


def unpack_module(fmt, parts, group):
    """Our own reading of a packed module back to float32 [N, K] (self-check)."""
    if fmt == "awq":
        codes = unpack_last_axis(parts["qweight"].array, AWQ_ORDER).T
        zeros = unpack_last_axis(parts["qzeros"].array, AWQ_ORDER).T
        scales = parts["scales"].to_f32().T
        return dequantize(codes, zeros, scales, group)
    if fmt == "gptq":
        codes = unpack_first_axis(parts["qweight"].array).T
        zeros = unpack_last_axis(parts["qzeros"].array).T + 1
        scales = parts["scales"].to_f32().T
        g_idx = parts["g_idx"].array
    else:
        n, k = parts["weight_shape"].array.tolist()
        codes = unpack_last_axis(parts["weight_packed"].array)[:, :k]
        scales = parts["weight_scale"].to_f32()
        zeros = np.full(scales.shape, 8, dtype=np.int64)
        assert codes.shape == (n, k)
        g_idx = parts["weight_g_idx"].array if "weight_g_idx" in parts else np.arange(k) // group
    # Every group holds G columns, in input order or not (act-order).
    assert np.array_equal(np.bincount(g_idx, minlength=scales.shape[1]), np.full(scales.shape[1], group))
    return dequantize_g_idx(codes, zeros, scales, g_idx)


def is_weight_file(name):
    return name.endswith(".safetensors") or name == "model.safetensors.index.json"


def copy_side_files(src, dst):
    """Tokenizer files, generation_config.json and any other non-weight file but config.json."""
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if name == "config.json" or is_weight_file(name) or not os.path.isfile(path):
            continue
        shutil.copyfile(path, os.path.join(dst, name))


INT4_FORMATS = ("awq", "gptq", "ct-w4a16")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--in", dest="src", required=True, help="float Hugging Face checkpoint directory")
    ap.add_argument("--format", required=True, choices=INT4_FORMATS + hf_quant_packer8.FORMATS)
    ap.add_argument("--group-size", type=int, help="int4: input columns per group; -1: all (8-bit: -1 only)")
    ap.add_argument("--sym", action="store_true", help="gptq: symmetric (zero 8); ct-w4a16 always is")
    ap.add_argument("--act-order", action="store_true",
                    help="gptq, ct-w4a16: desc_act / actorder group (a permuted g_idx, see the header)")
    ap.add_argument("--block-size", type=int, default=128,
                    help="fp8: rows and columns per weight_scale_inv tile (0: one weight_scale per tensor)")
    ap.add_argument("--scale-dtype", choices=["f32", "bf16"], default="f32", help="fp8: weight_scale_inv dtype")
    ap.add_argument("--out", required=True, help="quantized checkpoint directory")
    ap.add_argument("--dequantized-out", required=True, help="float32 twin with the dequantized weights")
    ap.add_argument("--self-check", action="store_true",
                    help="unpack every packed module again and require it to equal the float32 twin")
    args = ap.parse_args(argv)
    int4 = args.format in INT4_FORMATS
    if int4 and args.group_size is None:
        ap.error(f"{args.format} needs --group-size")
    if not int4 and args.group_size not in (None, -1):
        ap.error(f"{args.format} has no groups (int8: one scale per output row; fp8: --block-size); "
                 "--group-size -1 or none")
    if int4 and (args.group_size == 0 or args.group_size < -1):
        ap.error("--group-size must be positive or -1")
    if args.format == "awq" and args.group_size == -1:
        ap.error("awq needs a positive --group-size")
    if args.format == "awq" and args.sym:
        ap.error("awq is asymmetric (zero_point true); --sym does not apply")
    if args.act_order and (args.format not in ("gptq", "ct-w4a16") or args.group_size == -1):
        ap.error("--act-order needs gptq or ct-w4a16 with a positive --group-size")
    if args.block_size < 0:
        ap.error("--block-size must be >= 0")
    return args


def pack_one(args, prefix, w, model_dtype):
    """(parts, dequantized, unpacked again or None) for module `prefix`'s weight w [N, K]."""
    if args.format in INT4_FORMATS:
        perm = act_order_perm(w.shape[1], prefix) if args.act_order else None
        parts, deq = pack_module(args.format, w, args.group_size, args.sym, model_dtype, perm)
        g = w.shape[1] if args.group_size == -1 else args.group_size
        back = unpack_module(args.format, parts, g) if args.self_check else None
        return parts, deq, back
    scale_dtype = {"f32": "F32", "bf16": "BF16"}[args.scale_dtype]
    parts, deq = hf_quant_packer8.pack_module(args.format, w, model_dtype, args.block_size, scale_dtype)
    back = hf_quant_packer8.unpack_module(args.format, parts, args.block_size) if args.self_check else None
    return parts, deq, back


def pack_all(args, tensors, modules, model_dtype):
    """-> (quantized tensors, float32 twin tensors, max relative weight error)."""
    qtensors, ftensors = {}, {}
    for name, t in tensors.items():
        ftensors[name] = Tensor("F32", t.to_f32()) if t.dtype in ("BF16", "F16", "F32", "F64") else t
        qtensors[name] = t
    max_err = 0.0
    for prefix in modules:
        w = tensors[prefix + ".weight"].to_f32()
        parts, deq, back = pack_one(args, prefix, w, model_dtype)
        del qtensors[prefix + ".weight"]  # the 8-bit formats store their codes under this name again
        for suffix, t in parts.items():
            qtensors[f"{prefix}.{suffix}"] = t
        ftensors[prefix + ".weight"] = Tensor("F32", deq)
        max_err = max(max_err, float(np.abs(deq - w).max() / max(np.abs(w).max(), 1e-30)))
        if back is not None and not np.array_equal(back, deq):
            sys.exit(f"self-check failed: {prefix}: unpacked != dequantized "
                     f"(max |diff| {np.abs(back - deq).max()})")
    return qtensors, ftensors, max_err


def write_dir(out_dir, config, tensors, metadata, src, extra_json):
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):
        if is_weight_file(name) or name in extra_json or name.startswith("quant_model_description"):
            os.remove(os.path.join(out_dir, name))
    copy_side_files(src, out_dir)
    for name, obj in [("config.json", config)] + sorted(extra_json.items()):
        with open(os.path.join(out_dir, name), "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors, metadata)


def main(argv=None):
    args = parse_args(argv)
    if args.self_check and args.format == "fp8":
        hf_quant_packer8.e4m3_self_test()
    with open(os.path.join(args.src, "config.json")) as f:
        config = json.load(f)
    tensors, metadata = read_checkpoint(args.src)
    modules = quantized_modules(tensors)
    if not modules:
        sys.exit(f"{args.src}: no decoder-layer projections to quantize")
    is_moe = any(MOE_ROUTER_RE.match(name) for name in tensors)
    model_dtype = tensors[modules[0] + ".weight"].dtype
    if model_dtype not in ("BF16", "F16", "F32"):
        sys.exit(f"{args.src}: weights are {model_dtype}, not a float dtype")
    qtensors, ftensors, max_err = pack_all(args, tensors, modules, model_dtype)

    qconfig = dict(config)
    qconfig.pop("quantization_config", None)
    if args.format in INT4_FORMATS:
        quant = quant_config_for(args.format, args.group_size, args.sym, is_moe, model_dtype, args.act_order)
    else:
        quant = hf_quant_packer8.quant_config_for(args.format, is_moe, args.block_size)
    if quant is not None:  # msModelSlim writes none: its description file says it all
        qconfig["quantization_config"] = quant
    fconfig = dict(config)
    fconfig.pop("quantization_config", None)
    fconfig["torch_dtype"] = "float32"
    qmeta, qside = {"format": "pt"}, hf_quant_packer8.side_files(args.format, qtensors, modules)
    if args.format in ("gptq", "gptq-int8"):
        qmeta.update({"gptq_bits": "4" if args.format == "gptq" else "8",
                      "gptq_group_size": str(args.group_size or -1),
                      "gptq_desc_act": str(bool(args.act_order)), "gptq_damp_percent": "0.01",
                      "gptq_checkpoint_format": "gptq", "gptq_quant_method": "gptq"})
        qside["quantize_config.json"] = qconfig["quantization_config"]
    write_dir(args.out, qconfig, qtensors, qmeta, args.src, qside)
    write_dir(args.dequantized_out, fconfig, ftensors, {"format": "pt"}, args.src, {})
    scheme = f" g{args.group_size}" if args.format in INT4_FORMATS else ""
    print(f"packed {len(modules)} linears of {args.src} as {args.format}{scheme}"
          f"{' sym' if args.sym or args.format == 'ct-w4a16' else ''}{' act-order' if args.act_order else ''}"
          f"{' (MoE)' if is_moe else ''}: "
          f"max |w_deq - w| / max|w| = {max_err:.4f}; wrote {args.out} and {args.dequantized_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
