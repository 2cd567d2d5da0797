#!/usr/bin/python3
"""CTest gguf_quantizers_match_libggml: pagellm's quantizers against llama.cpp's own, byte for
byte, for Q4_0, Q5_0, Q4_1, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS.

The reference is libggml-base.so from npm node-llama-cpp (the library llama.cpp runs), called
through ctypes: ggml_quantize_chunk with no importance matrix (what llama-quantize calls) and,
for the types that have one, quantize_row_<type>_ref (the same bytes except IQ4_NL, whose _ref
skips the scale search; llama-quantize does not use it). Ours: `gguf_test_tool quantize`.

Inputs: weight-like rows (gaussian, heavy tails, per-row scales, f16-rounded as llama-quantize
reads an F16 file) and adversarial ones (all-zero and constant blocks, zero sub-blocks inside a
non-zero block, single outliers, exact ties, ramps, negative- or positive-only, tiny values down
to fp16 subnormal scales, values near fp16's range, sign-alternating, few distinct levels).

  /usr/bin/python3 tests/gguf/check_quantizers_with_libggml.py GGUF_TEST_TOOL OUT_DIR LIBGGML_BASE_SO
"""
import ctypes
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_with_libggml import ggml_dequantize, ggml_quantize, load_ggml  # noqa: E402

# ggml_type id, name for gguf_test_tool, elements per block, name of the _ref row quantizer
# whose bytes equal ggml_quantize_chunk's (None: no such function to compare).
TYPES = [
    (2, "q4_0", 32, "quantize_row_q4_0_ref"),
    (3, "q4_1", 32, "quantize_row_q4_1_ref"),
    (6, "q5_0", 32, "quantize_row_q5_0_ref"),
    (7, "q5_1", 32, "quantize_row_q5_1_ref"),
    (8, "q8_0", 32, "quantize_row_q8_0_ref"),
    (12, "q4_K", 256, "quantize_row_q4_K_ref"),
    (13, "q5_K", 256, "quantize_row_q5_K_ref"),
    (14, "q6_K", 256, "quantize_row_q6_K_ref"),
    (20, "iq4_nl", 32, None),
    (23, "iq4_xs", 256, "quantize_row_iq4_xs_ref"),
]

ROW = 1024  # values per row (4 super-blocks)


def weight_rows(rng, n_rows):
    """Random weight matrices: gaussian with per-row scales, heavy tails, f16-rounded."""
    scales = np.exp(rng.uniform(np.log(1e-3), np.log(3.0), size=(n_rows, 1)))
    rows = [rng.standard_normal((n_rows, ROW)) * scales, rng.standard_t(3, (n_rows, ROW)) * scales * 0.1]
    out = np.concatenate(rows).astype(np.float32)
    return out.astype(np.float16).astype(np.float32)


def adversarial_rows(rng):
    n = ROW
    g = rng.standard_normal(n)
    rows = [np.zeros(n), np.full(n, 0.25), np.full(n, -3.0), np.abs(g), -np.abs(g), g * 1e-3, g * 1e-5, g * 3e-7,
            g * 1e-8, g * 2000.0, np.clip(g * 20000.0, -65000, 65000), np.linspace(-1, 1, n), np.arange(n) % 16 - 8.0,
            (np.arange(n) % 32 - 16) * 0.5 + 0.25, np.where(np.arange(n) % 2 == 0, 1.0, -1.0) * np.abs(g),
            np.round(g * 2) / 2, np.sign(g)]
    spike = g * 0.01
    spike[::97] = 5.0
    rows.append(spike)
    sparse = np.where(rng.uniform(size=n) < 0.05, g, 0.0)
    rows.append(sparse)
    holes = g.copy()  # zero sub-blocks (16 and 32 wide) inside non-zero blocks
    holes[0:32] = 0
    holes[272:288] = 0
    holes[512:768:64] = 0
    rows.append(holes)
    ties = np.repeat(rng.integers(-8, 8, n // 8), 8) * 0.125
    rows.append(ties)
    outlier = np.full(n, 1e-4)
    outlier[5] = -1.0
    outlier[700] = 1.0
    rows.append(outlier)
    rows.append(np.where(np.arange(n) % 32 < 31, 0.0, 1.0))  # one value per block
    rows.append(rng.uniform(0.9, 1.1, n))  # narrow positive range: min > 0 clamped to 0 in k-quants
    rows.append(-rng.uniform(0.9, 1.1, n))
    return np.stack(rows).astype(np.float32)


def ggml_quantize_ref(lib, fn_name, type_id, x):
    traits = lib.ggml_get_type_traits(type_id).contents
    out = np.zeros(x.size // traits.blck_size * traits.type_size, dtype=np.uint8)
    fn = getattr(lib, fn_name)
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    fn.restype = None
    fn(np.ascontiguousarray(x).ctypes.data, out.ctypes.data, x.size)
    return out


def ours(tool, out_dir, name, x):
    src, dst = os.path.join(out_dir, f"q_{name}.f32"), os.path.join(out_dir, f"q_{name}.bin")
    np.ascontiguousarray(x).tofile(src)
    subprocess.run([tool, "quantize", name, str(x.shape[1]), src, dst], check=True)
    return np.fromfile(dst, dtype=np.uint8)


def first_difference(got, ref, block_bytes, x, block):
    bad = np.nonzero(got != ref)[0]
    b = bad[0] // block_bytes
    return (f"first differing block {b} (byte {bad[0] % block_bytes}, {bad.size} bytes differ), input "
            f"{x.reshape(-1)[b * block:(b + 1) * block][:8]}...")


def main():
    tool, out_dir, libpath = sys.argv[1:4]
    os.makedirs(out_dir, exist_ok=True)
    lib = load_ggml(libpath)
    rng = np.random.default_rng(23)
    x = np.concatenate([adversarial_rows(rng), weight_rows(rng, 96)])
    failures = 0
    for type_id, name, block, ref_fn in TYPES:
        block_bytes = lib.ggml_get_type_traits(type_id).contents.type_size
        ref = ggml_quantize(lib, type_id, x)
        got = ours(tool, out_dir, name, x)
        same = got.size == ref.size and np.array_equal(got, ref)
        same_ref = True
        if ref_fn is not None:
            same_ref = np.array_equal(ggml_quantize_ref(lib, ref_fn, type_id, x), ref)
        deq = ggml_dequantize(lib, type_id, ref, x.size)
        rel = np.sqrt(np.mean((deq - x.reshape(-1)) ** 2) / np.mean(x.reshape(-1) ** 2))
        detail = "" if same else "; " + first_difference(got, ref, block_bytes, x, block)
        print(f"{name:7s}: {x.shape[0]} rows x {ROW} ({ref.size // block_bytes} blocks), byte-identical={same}, "
              f"chunk==_ref={same_ref}, rel-RMSE={rel:.4f}{detail}")
        failures += 0 if (same and same_ref) else 1
    print(f"{len(TYPES) - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
