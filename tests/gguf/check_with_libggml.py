#!/usr/bin/python3
"""CTest gguf_quants_match_libggml: pagellm's dequantization against llama.cpp's own C
dequantizers, bit for bit, for Q4_0, Q5_0, Q4_1, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS.

The reference is libggml-base.so from npm node-llama-cpp (the library llama.cpp runs), called
through ctypes: ggml_get_type_traits(type)->to_float decodes, and ggml_quantize_chunk (the
reference quantizers, no imatrix) builds realistic blocks from float data. Random bytes with
finite fp16 scales cover every bit pattern the quantizers never produce.

  /usr/bin/python3 tests/gguf/check_with_libggml.py GGUF_TEST_TOOL OUT_DIR LIBGGML_BASE_SO
"""
import ctypes
import os
import subprocess
import sys

import numpy as np

# ggml_type id, name for gguf_test_tool, elements per block, bytes per block, offsets of the
# fp16 scale fields (kept finite in random blocks).
TYPES = [
    (2, "q4_0", 32, 18, [0]),
    (3, "q4_1", 32, 20, [0, 2]),
    (6, "q5_0", 32, 22, [0]),
    (7, "q5_1", 32, 24, [0, 2]),
    (8, "q8_0", 32, 34, [0]),
    (12, "q4_K", 256, 144, [0, 2]),
    (13, "q5_K", 256, 176, [0, 2]),
    (14, "q6_K", 256, 210, [208]),
    (20, "iq4_nl", 32, 18, [0]),
    (23, "iq4_xs", 256, 136, [0]),
]


class TypeTraits(ctypes.Structure):
    _fields_ = [("type_name", ctypes.c_char_p), ("blck_size", ctypes.c_int64),
                ("blck_size_interleave", ctypes.c_int64), ("type_size", ctypes.c_size_t),
                ("is_quantized", ctypes.c_bool), ("to_float", ctypes.c_void_p),
                ("from_float_ref", ctypes.c_void_p)]


ToFloat = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def load_ggml(path):
    lib = ctypes.CDLL(path)
    lib.ggml_get_type_traits.restype = ctypes.POINTER(TypeTraits)
    lib.ggml_get_type_traits.argtypes = [ctypes.c_int]
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    return lib


def float_inputs(rng, n):
    """Weights-like rows: gaussian, heavy tails, a constant row, zeros, tiny and large scales."""
    rows = [rng.standard_normal(n), rng.standard_t(3, n), np.full(n, 0.25), np.zeros(n),
            rng.standard_normal(n) * 1e-3, rng.standard_normal(n) * 40.0,
            np.abs(rng.standard_normal(n)), -np.abs(rng.standard_normal(n))]
    return np.stack(rows).astype(np.float32)


def random_blocks(rng, nblocks, block_bytes, scale_offsets):
    raw = rng.integers(0, 256, size=(nblocks, block_bytes), dtype=np.uint8)
    for off in scale_offsets:
        d = rng.uniform(-2.0, 2.0, size=nblocks).astype(np.float16).view(np.uint8).reshape(nblocks, 2)
        raw[:, off:off + 2] = d
    return raw.reshape(-1)


def ggml_dequantize(lib, type_id, raw, n):
    traits = lib.ggml_get_type_traits(type_id).contents
    out = np.zeros(n, dtype=np.float32)
    ToFloat(traits.to_float)(raw.ctypes.data, out.ctypes.data, n)
    return out


def ggml_quantize(lib, type_id, x):
    nrows, n_per_row = x.shape
    traits = lib.ggml_get_type_traits(type_id).contents
    out = np.zeros(nrows * n_per_row // traits.blck_size * traits.type_size, dtype=np.uint8)
    lib.ggml_quantize_chunk(type_id, np.ascontiguousarray(x).ctypes.data, out.ctypes.data, 0, nrows, n_per_row,
                            None)
    return out


def ours(tool, out_dir, name, raw):
    src, dst = os.path.join(out_dir, f"{name}.bin"), os.path.join(out_dir, f"{name}.f32")
    raw.tofile(src)
    subprocess.run([tool, "dequant", name, src, dst], check=True)
    return np.fromfile(dst, dtype=np.float32)


def main():
    tool, out_dir, libpath = sys.argv[1:4]
    os.makedirs(out_dir, exist_ok=True)
    lib = load_ggml(libpath)
    rng = np.random.default_rng(17)
    failures = 0
    for type_id, name, block, block_bytes, scale_offsets in TYPES:
        x = float_inputs(rng, 1024)
        quantized = ggml_quantize(lib, type_id, x)
        raw = np.concatenate([quantized, random_blocks(rng, 64, block_bytes, scale_offsets)])
        n = raw.size // block_bytes * block
        ref = ggml_dequantize(lib, type_id, raw, n)
        got = ours(tool, out_dir, name, raw)
        same = got.size == ref.size and np.array_equal(got.view(np.uint32), ref.view(np.uint32))
        # How far llama.cpp's own quantizer is from its input (a sanity check that the blocks are real).
        nq = x.size
        rel = np.sqrt(np.mean((ref[:nq] - x.reshape(-1)) ** 2) / max(np.mean(x.reshape(-1) ** 2), 1e-30))
        print(f"{name:7s}: {n} values ({quantized.size // block_bytes} quantized + 64 random blocks), "
              f"bit-exact={same}, rel-RMSE of llama.cpp's quantizer on the float rows={rel:.4f}")
        failures += 0 if same else 1
    print(f"{len(TYPES) - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
