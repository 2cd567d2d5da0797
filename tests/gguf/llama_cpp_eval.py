#!/usr/bin/python3
"""Loads a GGUF with llama.cpp (libllama from node-llama-cpp's prebuilt CPU binaries, through
ctypes; never downloads or builds anything) and prints, as JSON, the next-token distribution
after every position of a token sequence: the logits reference for pagellm's parity tests.

  /usr/bin/python3 tests/gguf/llama_cpp_eval.py --model M.gguf --tokens 9707,11,1879 [--top-k 10]
      [--full-out logprobs.json] [--full-out-f32 logprobs.f32] [--text "Hello"] [--threads 2]
      [--generate 64 [--generate-argmax]] [--flash-attention auto|on|off] [--kv-type F16|F32|BF16|Q8_0]

Output: {text_tokens?, flash_attention, tokens, positions: [{pos, argmax, top: [[id, logprob], ...]}],
         n_vocab, generated?: [id, ...], generated_top?: [[[id, logprob] x2], ...]}
logprob = log_softmax of llama.cpp's raw float32 logits, computed in float64 (compare with
log_softmax of pagellm's logits); top is sorted by logprob, highest first, ties by id.
--text tokenizes T as node-llama-cpp's model.tokenize(T, true) did: special tokens parsed, no
BOS/EOS added (text_tokens); without --tokens those are the evaluated tokens.
--generate N continues greedily (argmax, the first on ties as llama.cpp's greedy sampler;
end-of-generation tokens ignored) for N tokens, one token per llama_decode call as a server
would; generated_top[i] is the top-2 that chose generated[i] (with --generate-argmax it is left
out; the tokens are the same). --full-out writes every position's full logprob vector (n_vocab
floats, null for a -inf logit); --full-out-f32 the same as raw little-endian float32
[positions, n_vocab]. --flash-attention picks llama.cpp's attention kernel (default auto:
on for CPU; flash_attention echoes the request, "auto" / true / false) and --kv-type its KV cache
element type for keys and values (default F16), so tests can measure which llama.cpp setting a
difference comes from.

Why not node-llama-cpp (this replaced tests/gguf/llama_cpp_eval.mjs): it exposes no raw
logits, only a sorted probability Map over the whole vocabulary, ~125 ms per position for
151,936 entries plus ~2 s of startup, most of the llama.cpp parity tests' time. This script
sets up the context as node-llama-cpp 3.21.1 did (same libraries and CPU backend, context size
padded to 256, batch = ubatch = min(context, 512), mmap, SWA cache not full, lazy loading off,
all prompt tokens in one llama_decode with logits at every position), so the numbers are the
same computation: top-k ids, argmax and greedy tokens identical, logprobs within 4e-6 of its
log(float32 softmax) wherever that probability was a normal float32 (logprob > -87); below, its
values lost precision (off by up to 0.7) and underflowed to null near -103, these stay exact.
The struct layouts and enum values below are those of include/llama.h and ggml/include/ggml.h
in the llama.cpp release the binaries were built from
(.refs/node_modules/node-llama-cpp/llama/gitRelease.bundle); a default-value check catches a
different release.
"""
import argparse
import ctypes
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from libllama import BINS, load_libllama  # noqa: E402  tests/support/libllama.py
from logits import log_softmax as logprobs  # noqa: E402  tests/support/logits.py

# enum llama_flash_attn_type, enum ggml_type, enum llama_load_mode / llama_lazy_mode, GGML_LOG_LEVEL_ERROR.
FLASH_ATTN = {"auto": -1, "off": 0, "on": 1}
GGML_TYPES = {"F32": 0, "F16": 1, "Q8_0": 8, "BF16": 30}
LOAD_MODE_MMAP, LAZY_MODE_OFF, LOG_LEVEL_ERROR = 1, 0, 4
CONTEXT_SIZE_PAD, MAX_BATCH = 256, 512  # node-llama-cpp's contextSizePad and default batch size cap


class ModelParams(ctypes.Structure):
    _fields_ = [("devices", ctypes.c_void_p), ("tensor_buft_overrides", ctypes.c_void_p),
                ("n_gpu_layers", ctypes.c_int32), ("split_mode", ctypes.c_int), ("load_mode", ctypes.c_int),
                ("lazy_mode", ctypes.c_int), ("main_gpu", ctypes.c_int32), ("tensor_split", ctypes.c_void_p),
                ("progress_callback", ctypes.c_void_p), ("progress_callback_user_data", ctypes.c_void_p),
                ("kv_overrides", ctypes.c_void_p), ("vocab_only", ctypes.c_bool), ("check_tensors", ctypes.c_bool),
                ("use_extra_bufts", ctypes.c_bool), ("no_host", ctypes.c_bool), ("no_alloc", ctypes.c_bool),
                ("load_mtp", ctypes.c_bool)]


class ContextParams(ctypes.Structure):
    _fields_ = [("n_ctx", ctypes.c_uint32), ("n_batch", ctypes.c_uint32), ("n_ubatch", ctypes.c_uint32),
                ("n_seq_max", ctypes.c_uint32), ("n_rs_seq", ctypes.c_uint32), ("n_outputs_max", ctypes.c_uint32),
                ("n_outputs_max_per_seq", ctypes.c_uint32), ("n_threads", ctypes.c_int32),
                ("n_threads_batch", ctypes.c_int32), ("ctx_type", ctypes.c_int), ("rope_scaling_type", ctypes.c_int),
                ("pooling_type", ctypes.c_int), ("attention_type", ctypes.c_int), ("flash_attn_type", ctypes.c_int),
                ("rope_freq_base", ctypes.c_float), ("rope_freq_scale", ctypes.c_float),
                ("yarn_ext_factor", ctypes.c_float), ("yarn_attn_factor", ctypes.c_float),
                ("yarn_beta_fast", ctypes.c_float), ("yarn_beta_slow", ctypes.c_float),
                ("yarn_orig_ctx", ctypes.c_uint32), ("defrag_thold", ctypes.c_float),
                ("cb_eval", ctypes.c_void_p), ("cb_eval_user_data", ctypes.c_void_p),
                ("type_k", ctypes.c_int), ("type_v", ctypes.c_int),
                ("abort_callback", ctypes.c_void_p), ("abort_callback_data", ctypes.c_void_p),
                ("embeddings", ctypes.c_bool), ("offload_kqv", ctypes.c_bool), ("no_perf", ctypes.c_bool),
                ("op_offload", ctypes.c_bool), ("swa_full", ctypes.c_bool), ("kv_unified", ctypes.c_bool),
                ("samplers", ctypes.c_void_p), ("n_samplers", ctypes.c_size_t), ("ctx_other", ctypes.c_void_p)]


class Batch(ctypes.Structure):
    _fields_ = [("n_tokens", ctypes.c_int32), ("token", ctypes.POINTER(ctypes.c_int32)),
                ("embd", ctypes.POINTER(ctypes.c_float)), ("pos", ctypes.POINTER(ctypes.c_int32)),
                ("n_seq_id", ctypes.POINTER(ctypes.c_int32)),
                ("seq_id", ctypes.POINTER(ctypes.POINTER(ctypes.c_int32))), ("logits", ctypes.POINTER(ctypes.c_int8))]


LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


@LOG_CALLBACK
def log_errors_only(level, text, _user_data):
    # node-llama-cpp ran with LlamaLogLevel.error: errors to stderr, stdout only the JSON.
    if level == LOG_LEVEL_ERROR and text:
        sys.stderr.write(text.decode("utf-8", errors="replace"))


def declare(lib):
    p, i32, u32 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint32
    sigs = {
        "llama_log_set": (None, [LOG_CALLBACK, p]),
        "ggml_backend_load_all_from_path": (None, [ctypes.c_char_p]),
        "llama_backend_init": (None, []),
        "llama_backend_free": (None, []),
        "llama_model_default_params": (ModelParams, []),
        "llama_context_default_params": (ContextParams, []),
        "llama_model_load_from_file": (p, [ctypes.c_char_p, ModelParams]),
        "llama_model_free": (None, [p]),
        "llama_model_n_ctx_train": (i32, [p]),
        "llama_model_n_swa": (i32, [p]),
        "llama_model_get_vocab": (p, [p]),
        "llama_vocab_n_tokens": (i32, [p]),
        "llama_tokenize": (i32, [p, ctypes.c_char_p, i32, ctypes.POINTER(i32), i32, ctypes.c_bool, ctypes.c_bool]),
        "llama_init_from_model": (p, [p, ContextParams]),
        "llama_free": (None, [p]),
        "llama_batch_init": (Batch, [i32, i32, i32]),
        "llama_batch_free": (None, [Batch]),
        "llama_decode": (i32, [p, Batch]),
        "llama_get_logits_ith": (ctypes.POINTER(ctypes.c_float), [p, i32]),
        "llama_n_batch": (u32, [p]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes


def check_release(mp, cp):
    """Defaults of llama_model_default_params / llama_context_default_params in the release the
    structs above were read from; a mismatch means another llama.cpp with another layout."""
    got = (mp.n_gpu_layers, mp.load_mode, mp.use_extra_bufts, mp.load_mtp, cp.n_ctx, cp.n_batch,
           cp.n_outputs_max_per_seq, cp.flash_attn_type, cp.yarn_ext_factor, cp.type_k, cp.offload_kqv, cp.swa_full,
           cp.kv_unified, cp.n_samplers, cp.ctx_other)
    want = (-1, -1, True, False, 512, 2048, 1, -1, -1.0, 1, True, True, False, 0, None)
    if got != want:
        sys.exit(f"libllama's default params {got} are not llama.cpp v0.4.0's {want}: update llama_cpp_eval.py's "
                 "structs from the shipped release's include/llama.h")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 allow_abbrev=False)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", type=lambda v: [int(s) for s in v.split(",") if s != ""])
    ap.add_argument("--text")
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--full-out")
    ap.add_argument("--full-out-f32")
    ap.add_argument("--flash-attention", default="auto", choices=sorted(FLASH_ATTN))
    ap.add_argument("--kv-type", choices=sorted(GGML_TYPES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--generate", type=int, default=0)
    ap.add_argument("--generate-argmax", action="store_true")
    ap.add_argument("--bins", default=BINS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.tokens is None and args.text is None:
        ap.error("--tokens or --text is required")
    return args


def pad(n, to=CONTEXT_SIZE_PAD):
    return (n + to - 1) // to * to


def tokenize(lib, vocab, text):
    data = text.encode("utf-8")
    n = len(data)
    while True:
        buf = (ctypes.c_int32 * max(n, 1))()
        got = lib.llama_tokenize(vocab, data, len(data), buf, len(buf), False, True)
        if got >= 0:
            return list(buf[:got])
        if got == -2**31:
            sys.exit("llama_tokenize: the result exceeds int32")
        n = -got


def finite_or_none(v):
    return v if math.isfinite(v) else None


def top_k(lp, k):
    """[[id, logprob], ...] of the k highest logprobs, highest first, ties by lower id."""
    k = min(k, lp.shape[0])
    if k <= 0:
        return []
    ids = np.argpartition(-lp, k - 1)[:k] if k < lp.shape[0] else np.arange(lp.shape[0])
    ids = ids[np.lexsort((ids, -lp[ids]))]
    return [[int(i), finite_or_none(float(lp[i]))] for i in ids]


class Evaluator:
    """One llama.cpp model and context; decode() returns the float32 logits of every token."""

    def __init__(self, lib, model_path):
        self.lib = lib
        mp = lib.llama_model_default_params()
        check_release(mp, lib.llama_context_default_params())
        mp.n_gpu_layers, mp.load_mode, mp.lazy_mode = 0, LOAD_MODE_MMAP, LAZY_MODE_OFF
        self.model = lib.llama_model_load_from_file(model_path.encode(), mp)
        if not self.model:
            sys.exit(f"llama.cpp could not load {model_path}")
        self.vocab = lib.llama_model_get_vocab(self.model)
        self.n_vocab = lib.llama_vocab_n_tokens(self.vocab)
        self.ctx = self.batch = None

    def create_context(self, args, n_tokens):
        lib = self.lib
        cp = lib.llama_context_default_params()
        # node-llama-cpp's context sizing (LlamaContext._create and its constructor).
        size = max(64, n_tokens + args.generate + 8)
        train = lib.llama_model_n_ctx_train(self.model)
        if size <= train and pad(size) < train:
            size = pad(size)
        cp.n_ctx = pad(size)
        cp.n_batch = cp.n_ubatch = min(size, MAX_BATCH) + (1 if lib.llama_model_n_swa(self.model) > 0 else 0)
        threads = args.threads if args.threads > 0 else os.cpu_count()
        cp.n_threads = cp.n_threads_batch = threads
        cp.flash_attn_type = FLASH_ATTN[args.flash_attention]
        if args.kv_type:
            cp.type_k = cp.type_v = GGML_TYPES[args.kv_type]
        cp.no_perf, cp.swa_full = True, False
        self.ctx = lib.llama_init_from_model(self.model, cp)
        if not self.ctx:
            sys.exit(f"llama.cpp could not create a context for {args.model}")
        self.n_batch = lib.llama_n_batch(self.ctx)
        self.batch = lib.llama_batch_init(self.n_batch, 0, 1)
        self.n_past = 0

    def decode(self, tokens):
        out = np.empty((len(tokens), self.n_vocab), dtype=np.float32)
        b = self.batch
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start:start + self.n_batch]
            b.n_tokens = len(chunk)
            for i, tok in enumerate(chunk):
                b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = tok, self.n_past + i, 1, 1
                b.seq_id[i][0] = 0
            rc = self.lib.llama_decode(self.ctx, b)
            if rc != 0:
                sys.exit(f"llama_decode failed ({rc})")
            for i in range(len(chunk)):
                row = self.lib.llama_get_logits_ith(self.ctx, i)
                out[start + i] = np.ctypeslib.as_array(row, shape=(self.n_vocab,))
            self.n_past += len(chunk)
        return out

    def close(self):
        if self.ctx:
            self.lib.llama_batch_free(self.batch)
            self.lib.llama_free(self.ctx)
        self.lib.llama_model_free(self.model)


def main():
    args = parse_args()
    lib = load_libllama(args.bins)
    declare(lib)
    lib.llama_log_set(log_errors_only, None)
    lib.ggml_backend_load_all_from_path(args.bins.encode())  # the CPU variant for this machine, as node did
    lib.llama_backend_init()

    out = {}
    ev = Evaluator(lib, args.model)
    tokens = args.tokens
    if args.text is not None:
        out["text_tokens"] = tokenize(lib, ev.vocab, args.text)
        if tokens is None:
            tokens = out["text_tokens"]
    ev.create_context(args, len(tokens))
    out["flash_attention"] = {"auto": "auto", "on": True, "off": False}[args.flash_attention]
    out["tokens"] = tokens

    logits = ev.decode(tokens)
    out["positions"] = []
    full_f32 = open(args.full_out_f32, "wb") if args.full_out_f32 else None
    full = [] if args.full_out else None
    for pos in range(len(tokens)):
        lp = logprobs(logits[pos])
        top = top_k(lp, args.top_k)
        out["positions"].append({"pos": pos, "argmax": int(np.argmax(logits[pos])), "top": top})
        if full is not None:
            full.append([finite_or_none(v) for v in lp.tolist()])
        if full_f32 is not None:
            full_f32.write(lp.astype("<f4").tobytes())
    out["n_vocab"] = ev.n_vocab

    if args.generate:
        last = logprobs(logits[-1])
        nxt = int(np.argmax(logits[-1]))
        out["generated"] = []
        if not args.generate_argmax:
            out["generated_top"] = [top_k(last, 2)]
        for i in range(args.generate):
            out["generated"].append(nxt)
            if i + 1 == args.generate:
                break
            row = ev.decode([nxt])[0]
            nxt = int(np.argmax(row))  # llama.cpp's greedy sampler: the first maximum
            if not args.generate_argmax:
                out["generated_top"].append(top_k(logprobs(row), 2))

    if full is not None:
        with open(args.full_out, "w") as f:
            json.dump(full, f)
    if full_f32 is not None:
        full_f32.close()
    print(json.dumps(out))
    sys.stdout.flush()
    ev.close()
    lib.llama_backend_free()


if __name__ == "__main__":
    main()
