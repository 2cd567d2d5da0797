#!/usr/bin/python3
"""Quantizes a GGUF with llama.cpp's own quantizer: llama_model_quantize in the libllama that
npm node-llama-cpp ships (the release its binaries were built from), through ctypes, with
llama.cpp's default recipe for the file type (e.g. Q4_K_M: Q4_K with Q6_K for output /
tied embeddings and half of attn_v / ffn_down, fallbacks for rows not a multiple of 256).
No imatrix. Used to make the Q4_K_M files of the parity checks and the benchmark.

  /usr/bin/python3 tests/parity/llama_quantize.py IN_F16.gguf OUT.gguf q4_k_m [--threads N]
"""
import argparse
import ctypes
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from libllama import BINS, load_libllama  # noqa: E402  tests/support/libllama.py

# llama_ftype values (include/llama.h).
FTYPES = {"q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q4_k_m": 15, "q5_k_m": 17, "q6_k": 18, "iq4_nl": 25,
          "iq4_xs": 30}


class QuantizeParams(ctypes.Structure):
    _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int), ("output_tensor_type", ctypes.c_int),
                ("token_embedding_type", ctypes.c_int), ("allow_requantize", ctypes.c_bool),
                ("quantize_output_tensor", ctypes.c_bool), ("only_copy", ctypes.c_bool), ("pure", ctypes.c_bool),
                ("keep_split", ctypes.c_bool), ("dry_run", ctypes.c_bool), ("imatrix", ctypes.c_void_p),
                ("kv_overrides", ctypes.c_void_p), ("tt_overrides", ctypes.c_void_p),
                ("prune_layers", ctypes.c_void_p), ("max_buf_size", ctypes.c_size_t)]


def load_quantizer(bins):
    lib = load_libllama(bins)
    lib.llama_model_quantize_default_params.restype = QuantizeParams
    lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(QuantizeParams)]
    lib.llama_model_quantize.restype = ctypes.c_uint32
    return lib


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("ftype", choices=sorted(FTYPES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bins", default=BINS)
    args = ap.parse_args()
    lib = load_quantizer(args.bins)
    params = lib.llama_model_quantize_default_params()
    params.nthread = args.threads
    params.ftype = FTYPES[args.ftype]
    rc = lib.llama_model_quantize(args.src.encode(), args.dst.encode(), ctypes.byref(params))
    if rc != 0:
        sys.exit(f"llama_model_quantize failed ({rc})")


if __name__ == "__main__":
    main()
