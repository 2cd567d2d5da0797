#!/usr/bin/python3
"""Reference packers for the Hugging Face 8-bit formats, used by hf_quant_packer.py (which
owns the command line): a float32 weight [N, K] -> the module's tensors in the published
layout, plus the float32 weight they encode (the dequantized twin's).

Written from the formats as their producers and consumers define them (read, not copied):

  ct-w8a8    compressed-tensors "int-quantized", llm-compressor's W8A8 preset
             (vllm-project/compressed-tensors):
             * quantization/utils/helpers.py, calculate_qparams (symmetric int): min/max
               widened to include 0, scale = max(|min|, |max|) / (255 / 2) per output row
               (strategy channel); stored in the module dtype (bf16 here; all-zero rows get the
               dtype's eps); quantization/lifecycle/forward.py: q = clamp(round(w / s), -128,
               127) against the stored scale.
             * compressors/naive_quantized/base.py, IntQuantizationCompressor (chosen when
               input_activations are set): P.weight = the int8 codes [N, K], P.weight_scale
               [N, 1]; no weight_zero_point when symmetric.
             * config_groups.group_0: weights {8, int, symmetric, channel}, input_activations
               {8, int, symmetric, token, dynamic true}, format int-quantized (vLLM's
               CompressedTensorsW8A8Int8 dynamic scheme).
  ct-w8a16   the same weights without input_activations: PackedQuantizationCompressor
             (compressors/pack_quantized/base.py, can_compress: int weights of 1..8 bits) and
             pack_to_int32 (pack_quantized/helpers.py) with num_bits 8: weight_packed int32
             [N, ceil(K/4)], code of k = 4c + j in bits 8j..8j+7 of word c, offset by
             1 << (num_bits - 1) = 128; weight_shape int64 [N, K].
  gptq-int8  AutoGPTQ, checkpoint_format "gptq", bits 8, sym, group_size -1 (AutoGPTQ/AutoGPTQ):
             * auto_gptq/quantization/quantizer.py, find_params (sym): xmax = max(|xmin|, xmax),
               xmin = -xmax (all-zero rows: [-1, 1]), scale = (xmax - xmin) / 255, zero =
               (maxq + 1) / 2 = 128; q = clamp(round(w / s) + 128, 0, 255) against the fp16 scale.
             * auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py, pack with bits 8: qweight int32
               [K/4, N], input k = 4i + j in bits 8j..8j+7 of qweight[i, n] (32 / bits values per
               word along K); qzeros int32 [1, N/4]: zero - 1 (127) of column 4c + j in byte j of
               word c; scales fp16 [1, N]; g_idx int32 [K] = k // K = 0.
  ascend-w8a8-dynamic  vLLM-Ascend's msModelSlim W8A8_DYNAMIC (vllm-project/vllm-ascend):
             * vllm_ascend/quantization/methods/w8a8_dynamic.py, AscendW8A8DynamicLinearMethod:
               weight int8 [N, K], weight_scale and weight_offset [N, 1] in the params dtype
               (bf16 here); activations quantized per token at run time (npu_dynamic_quant);
               weight_offset is not passed to npu_quant_matmul, so the weights are symmetric:
               we store offsets of 0.
             * vllm_ascend/quantization/modelslim_config.py: quant_model_description.json
               beside config.json, {"model_quant_type", "version", tensor name ->
               "W8A8_DYNAMIC" | "FLOAT"}; config.json has no quantization_config (vLLM-Ascend
               is told `--quantization ascend`).
             * msModelSlim's quantizer itself is not part of the format; we use the plain
               symmetric one, scale = amax / 127, q = round(w / s) against the bf16 scale.
  fp8        Qwen's (and DeepSeek-V3's) block fp8: quant_method "fp8", fmt "e4m3",
             activation_scheme "dynamic", weight_block_size [128, 128] (vLLM's Fp8Config /
             Fp8LinearMethod block path; Qwen3 "-FP8" model cards):
             * per 128 x 128 tile (the last ones ragged): scale_inv = amax / 448 (e4m3fn's
               largest finite value; all-zero tiles: 1), P.weight = e4m3(w / scale_inv) rounded to
               nearest even and saturated at +-448, safetensors "F8_E4M3" [N, K];
               P.weight_scale_inv [ceil(N/128), ceil(K/128)] f32 (DeepSeek-V3's; Qwen3.5 stores
               bf16: --scale-dtype); the weight is fp8 * scale_inv, a multiplier despite the name.
               --block-size 0: one P.weight_scale [] for the tensor instead.
             * float8_e4m3fn: 1 sign, 4 exponent (bias 7) and 3 mantissa bits; exponent 0 is
               subnormal (m / 8 * 2^-6); no infinities; S.1111.111 is NaN. NumPy has no fp8
               type: the codec is below, and --self-check tests it exhaustively.

The twin is the decoded weight computed in float64 and stored float32: exact for the int8
formats (an 8-bit code times a bf16 or fp16 scale) and for fp8 with bf16 scales; fp8 with
f32 scales rounds the product once, to the nearest float32 (a relative 2^-24).
"""
import numpy as np

from safetensors_io import Tensor, from_f32

FORMATS = ("ct-w8a8", "ct-w8a16", "gptq-int8", "ascend-w8a8-dynamic", "fp8")

ASCEND_DESCRIPTION = "quant_model_description.json"

# ---------------------------------------------------------------------------------------
# e4m3fn


def _e4m3_table():
    table = np.zeros(256, dtype=np.float64)
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        exponent, mantissa = (b >> 3) & 15, b & 7
        if exponent == 15 and mantissa == 7:
            table[b] = np.nan
        elif exponent == 0:
            table[b] = sign * mantissa * 2.0 ** -9
        else:
            table[b] = sign * (8 + mantissa) * 2.0 ** (exponent - 10)
    return table


E4M3_VALUES = _e4m3_table()  # float64 value of every byte


def e4m3_decode(codes):
    return E4M3_VALUES[np.asarray(codes, dtype=np.uint8)]


def e4m3_encode(x):
    """float array -> float8_e4m3fn bytes: round to nearest, ties to even, saturating at +-448."""
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any():
        raise ValueError("NaN has no place in an fp8 weight")
    sign = np.signbit(x).astype(np.int64) << 7
    a = np.minimum(np.abs(x), 448.0)
    _, e = np.frexp(a)                   # a = f * 2^e, f in [0.5, 1): leading bit 2^(e - 1)
    lead = np.maximum(e - 1, -6)         # subnormals share the smallest normal binade's step
    step = np.ldexp(1.0, lead - 3)       # 3 mantissa bits
    r = np.round(a / step) * step        # np.round: half to even; exact in float64
    _, e2 = np.frexp(r)
    normal = r >= 2.0 ** -6
    exponent = np.where(normal, e2 - 1 + 7, 0)
    mantissa = np.where(normal, r / np.ldexp(1.0, e2 - 1 - 3) - 8, r / 2.0 ** -9)
    return (sign | (exponent.astype(np.int64) << 3) | mantissa.astype(np.int64)).astype(np.uint8)


def e4m3_self_test():
    """Every finite code round-trips; midpoints between neighbours go to the even code; values
    a hair off a midpoint go to the nearer one; beyond 448 saturates."""
    finite = [b for b in range(256) if not np.isnan(E4M3_VALUES[b])]
    assert np.array_equal(e4m3_encode(E4M3_VALUES[finite]), np.array(finite, dtype=np.uint8))
    for b in range(0x7E):  # positive neighbours b, b + 1
        lo, hi = E4M3_VALUES[b], E4M3_VALUES[b + 1]
        mid = (lo + hi) / 2
        assert e4m3_encode(mid) == (b if b % 2 == 0 else b + 1), b
        assert e4m3_encode(np.nextafter(mid, 0)) == b and e4m3_encode(np.nextafter(mid, 1e9)) == b + 1, b
        assert e4m3_encode(-mid) == (0x80 | (b if b % 2 == 0 else b + 1)), b
    assert e4m3_encode(1e6) == 0x7E and e4m3_encode(-464.0) == 0xFE


# ---------------------------------------------------------------------------------------
# packing 8-bit codes four to an int32


def pack_bytes_last_axis(u8):
    """uint8 [R, C] -> int32 [R, ceil(C/4)], byte j (bits 8j..8j+7) of word c = u8[:, 4c + j]."""
    u8 = np.asarray(u8, dtype=np.uint32)
    r, c = u8.shape
    padded = np.zeros((r, -(-c // 4) * 4), dtype=np.uint32)
    padded[:, :c] = u8
    g = padded.reshape(r, -1, 4)
    word = np.zeros(g.shape[:2], dtype=np.uint32)
    for j in range(4):
        word |= g[:, :, j] << np.uint32(8 * j)
    return word.view(np.int32)


def pack_bytes_first_axis(u8):
    """uint8 [R, C], R % 4 == 0 -> int32 [R/4, C], byte j of [i, c] = u8[4i + j, c]."""
    return pack_bytes_last_axis(np.asarray(u8).T).T.copy()


def unpack_bytes_last_axis(words, count):
    u = np.asarray(words, dtype=np.int32).view(np.uint32)
    out = np.stack([(u >> np.uint32(8 * j)) & np.uint32(0xFF) for j in range(4)], axis=-1)
    return out.reshape(u.shape[0], -1)[:, :count].astype(np.int64)


# ---------------------------------------------------------------------------------------
# quantizers: w float32 [N, K] -> (parts {suffix: Tensor}, dequantized float32 [N, K])


def _eps(dtype):
    return {"BF16": 2.0 ** -7, "F16": float(np.finfo(np.float16).eps)}.get(dtype, float(np.finfo(np.float32).eps))


def _row_scales(scale, dtype):
    """Scales [N] stored as `dtype` [N, 1] -> (Tensor, the stored float64 values [N])."""
    stored = from_f32(dtype, scale.astype(np.float32).reshape(-1, 1))
    return stored, stored.to_f32().astype(np.float64).reshape(-1)


def _amax(w):
    return np.abs(w).max(axis=1).astype(np.float64)  # |min| and |max| widened to include 0


def pack_ct_int8(w, model_dtype, packed):
    scale = _amax(w) / (255 / 2)
    scale = np.where(scale == 0, _eps(model_dtype), scale)
    stored, s = _row_scales(scale, model_dtype)
    q = np.clip(np.round(w / s[:, None]), -128, 127).astype(np.int64)
    n, k = w.shape
    if packed:
        parts = {"weight_packed": Tensor("I32", pack_bytes_last_axis(q + 128)),
                 "weight_scale": stored, "weight_shape": Tensor("I64", np.array([n, k], dtype=np.int64))}
    else:
        parts = {"weight": Tensor("I8", q.astype(np.int8)), "weight_scale": stored}
    return parts, (q * s[:, None]).astype(np.float32)


def pack_gptq_int8(w):
    n, k = w.shape
    if k % 4 != 0 or n % 4 != 0:
        raise ValueError(f"gptq-int8 needs in and out sizes that are multiples of 4, got {w.shape}")
    xmax = _amax(w)
    xmin = -xmax
    zero_rows = xmax == 0
    xmin, xmax = np.where(zero_rows, -1.0, xmin), np.where(zero_rows, 1.0, xmax)
    s16 = ((xmax - xmin) / 255).astype(np.float16)
    s = s16.astype(np.float64)
    q = np.clip(np.round(w / s[:, None]) + 128, 0, 255).astype(np.int64)  # [N, K], zero 128
    parts = {"qweight": Tensor("I32", pack_bytes_first_axis(q.T)),  # [K/4, N]
             "qzeros": Tensor("I32", pack_bytes_last_axis(np.full((1, n), 128 - 1))),  # v1: zero - 1
             "scales": Tensor("F16", s16.reshape(1, n)),
             "g_idx": Tensor("I32", np.zeros(k, dtype=np.int32))}
    return parts, ((q - 128) * s[:, None]).astype(np.float32)


def pack_ascend(w, model_dtype):
    scale = _amax(w) / 127
    scale = np.where(scale == 0, 1.0, scale)
    stored, s = _row_scales(scale, model_dtype)
    q = np.clip(np.round(w / s[:, None]), -128, 127).astype(np.int64)
    parts = {"weight": Tensor("I8", q.astype(np.int8)), "weight_scale": stored,
             "weight_offset": from_f32(model_dtype, np.zeros((w.shape[0], 1), dtype=np.float32))}
    return parts, (q * s[:, None]).astype(np.float32)


def _tiles(n, k, block):
    bn, bk = (n, k) if block == 0 else (block, block)
    return bn, bk, -(-n // bn), -(-k // bk)


def pack_fp8(w, block, scale_dtype):
    n, k = w.shape
    bn, bk, rb, cb = _tiles(n, k, block)
    amax = np.zeros((rb, cb))
    for i in range(rb):
        for j in range(cb):
            amax[i, j] = np.abs(w[i * bn:(i + 1) * bn, j * bk:(j + 1) * bk]).max()
    scale_inv = np.where(amax == 0, 1.0, amax / 448.0)
    stored = from_f32(scale_dtype, scale_inv.astype(np.float32))
    s = np.repeat(np.repeat(stored.to_f32().astype(np.float64), bn, axis=0), bk, axis=1)[:n, :k]
    codes = e4m3_encode(w / s)
    if block == 0:
        parts = {"weight": Tensor("F8_E4M3", codes),
                 "weight_scale": Tensor(stored.dtype, stored.array.reshape(()))}
    else:
        parts = {"weight": Tensor("F8_E4M3", codes), "weight_scale_inv": stored}
    return parts, (e4m3_decode(codes) * s).astype(np.float32)


def pack_module(fmt, w, model_dtype, block=128, scale_dtype="F32"):
    if fmt in ("ct-w8a8", "ct-w8a16"):
        return pack_ct_int8(w, model_dtype, packed=fmt == "ct-w8a16")
    if fmt == "gptq-int8":
        return pack_gptq_int8(w)
    if fmt == "ascend-w8a8-dynamic":
        return pack_ascend(w, model_dtype)
    if fmt == "fp8":
        return pack_fp8(w, block, scale_dtype)
    raise ValueError(fmt)


def unpack_module(fmt, parts, block=128):
    """Our own reading of a packed module back to float32 [N, K] (self-check)."""
    if fmt == "ct-w8a8" or fmt == "ascend-w8a8-dynamic":
        if fmt == "ascend-w8a8-dynamic":
            assert not parts["weight_offset"].to_f32().any()
        codes = parts["weight"].array.astype(np.int64)
        return (codes * parts["weight_scale"].to_f32().astype(np.float64)).astype(np.float32)
    if fmt == "ct-w8a16":
        n, k = parts["weight_shape"].array.tolist()
        codes = unpack_bytes_last_axis(parts["weight_packed"].array, k) - 128
        return (codes * parts["weight_scale"].to_f32().astype(np.float64)).astype(np.float32)
    if fmt == "gptq-int8":
        words = parts["qweight"].array  # [K/4, N]
        k4, n = words.shape
        codes = unpack_bytes_last_axis(words.T.copy(), 4 * k4)  # [N, K]: row n, byte j of word i -> k = 4i + j
        zeros = unpack_bytes_last_axis(parts["qzeros"].array, n) + 1
        return ((codes - zeros.T) * parts["scales"].to_f32().astype(np.float64).T).astype(np.float32)
    if fmt == "fp8":
        values = e4m3_decode(parts["weight"].array)
        n, k = values.shape
        bn, bk, _, _ = _tiles(n, k, block)
        scale = parts["weight_scale_inv" if block else "weight_scale"].to_f32().astype(np.float64).reshape(
            -(-n // bn), -(-k // bk))
        return (values * np.repeat(np.repeat(scale, bn, axis=0), bk, axis=1)[:n, :k]).astype(np.float32)
    raise ValueError(fmt)


# ---------------------------------------------------------------------------------------
# config.json and side files


def quant_config_for(fmt, is_moe, block=128):
    """config.json's quantization_config, or None (msModelSlim writes none)."""
    if fmt in ("ct-w8a8", "ct-w8a16"):
        format_name = "int-quantized" if fmt == "ct-w8a8" else "pack-quantized"
        activations = ({"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token", "dynamic": True,
                        "group_size": None, "block_structure": None, "actorder": None, "observer": None,
                        "observer_kwargs": {}} if fmt == "ct-w8a8" else None)
        return {
            "config_groups": {"group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel",
                            "group_size": None, "block_structure": None, "dynamic": False, "actorder": None,
                            "observer": "minmax", "observer_kwargs": {}},
                "input_activations": activations, "output_activations": None, "format": format_name}},
            "quant_method": "compressed-tensors", "kv_cache_scheme": None, "format": format_name,
            "quantization_status": "compressed", "global_compression_ratio": None,
            "ignore": ["lm_head"] + (["re:.*mlp.gate$"] if is_moe else []), "sparsity_config": {}}
    if fmt == "gptq-int8":
        return {"bits": 8, "group_size": -1, "damp_percent": 0.01, "desc_act": False, "static_groups": False,
                "sym": True, "true_sequential": True, "model_name_or_path": None, "model_file_base_name": "model",
                "quant_method": "gptq", "checkpoint_format": "gptq"}
    if fmt == "fp8":
        return {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                "weight_block_size": [block, block] if block else None}
    if fmt == "ascend-w8a8-dynamic":
        return None
    raise ValueError(fmt)


def side_files(fmt, tensors, modules):
    """{file name: JSON object} to write beside config.json: msModelSlim's description."""
    if fmt != "ascend-w8a8-dynamic":
        return {}
    quantized = {f"{m}.{s}" for m in modules for s in ("weight", "weight_scale", "weight_offset")}
    description = {"model_quant_type": "W8A8_DYNAMIC", "version": "1.0.0"}
    for name in sorted(tensors):
        description[name] = "W8A8_DYNAMIC" if name in quantized else "FLOAT"
    return {ASCEND_DESCRIPTION: description}
