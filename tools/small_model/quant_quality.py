#!/usr/bin/env python3
"""Quantization loss on the small model: perplexity and KL divergence against bf16, per format,
for pagellm and for llama.cpp on the same files.

    /usr/bin/python3 tools/small_model/quant_quality.py --pagellm build/pagellm \
        --model models/pydoc-qwen3 --corpus CORPUS_DIR --work /tmp/pagellm-quant-quality \
        [--formats bf16,q8_0,q4_k_m,...] [--window 128] [--windows 8] [--json out.json]

The model folder is the unpacked bf16 checkpoint (`pagellm unpack-model`). Files are made once
in --work: F16/BF16/Q8_0 GGUFs by `pagellm convert`; the k-quant and IQ4 GGUFs by llama.cpp's
own quantizer on the F16 file (tests/parity/llama_quantize.py, no imatrix); the Hugging Face
int4 checkpoints by the reference packer (tests/quant/hf_quant_packer.py: round-to-nearest
per group, no calibration, so these are plain RTN int4 in AWQ's / GPTQ's layouts, not the
result of the AWQ or GPTQ algorithms). `int8` is pagellm's own W8A8 (`--quantization int8`).

Every engine scores the same held-out tokens (build_corpus.py's heldout split, tokenized):
consecutive windows, positions 1..n-1 of each given the ones before. For each format:
  ppl        exp(mean NLL of the target tokens)
  kl         mean over positions of KL(P_bf16 || P_format), the full 151,936-row distributions,
             P_bf16 from the same engine on the bf16 weights (pagellm: the folder; llama.cpp:
             the BF16 GGUF), in nats
  top1       fraction of positions whose argmax equals the bf16 run's
Prints a table and one JSON object.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from perplexity import windows_of  # noqa: E402

LLAMA_QUANTIZED = {"q4_k_m", "q5_k_m", "q6_k", "iq4_xs", "q4_0", "q5_0", "iq4_nl"}
CONVERTED = {"f16", "bf16", "q8_0"}
# Reference-packer formats: (packer --format, extra flags).
PACKED = {"awq": ("awq", []), "gptq": ("gptq", []), "gptq-sym": ("gptq", ["--sym"]), "ct-w4a16": ("ct-w4a16", [])}
PAGELLM_FLAGS = {"int8": ["--quantization", "int8"]}
DEFAULT_FORMATS = "bf16,q8_0,int8,q6_k,q5_k_m,q4_k_m,iq4_xs,q4_0,awq,gptq,ct-w4a16"


def run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if res.returncode != 0:
        sys.exit(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-3000:]}")
    return res.stdout


def make_files(args, formats):
    """Returns {format: (pagellm model path, pagellm flags, llama.cpp GGUF or None)}."""
    os.makedirs(args.work, exist_ok=True)
    gguf = lambda t: os.path.join(args.work, f"model-{t}.gguf")  # noqa: E731
    for t in ["f16", "bf16"] + [t for t in formats if t in CONVERTED]:
        if not os.path.exists(gguf(t)):
            run([args.pagellm, "convert", args.model, "--outtype", t, "--outfile", gguf(t)])
    out = {}
    for f in formats:
        if f == "bf16":
            out[f] = (args.model, [], gguf("bf16"))
        elif f in CONVERTED or f in LLAMA_QUANTIZED:
            if not os.path.exists(gguf(f)):
                run([sys.executable, os.path.join(ROOT, "tests", "parity", "llama_quantize.py"), gguf("f16"), gguf(f), f])
            out[f] = (gguf(f), [], gguf(f))
        elif f in PACKED:
            fmt_name, extra = PACKED[f]
            d = os.path.join(args.work, f"hf-{f}-g{args.group_size}")
            if not os.path.exists(os.path.join(d, "config.json")):
                run([sys.executable, os.path.join(ROOT, "tests", "quant", "hf_quant_packer.py"), "--in", args.model,
                     "--format", fmt_name, "--group-size", str(args.group_size), *extra, "--out", d,
                     "--dequantized-out", d + "-dequantized"])
            out[f] = (d, [], None)
        elif f in PAGELLM_FLAGS:
            out[f] = (args.model, PAGELLM_FLAGS[f], None)
        else:
            sys.exit(f"unknown format {f}")
    return out


def log_softmax(logits):
    logits = logits.astype(np.float64)
    m = logits.max(axis=1, keepdims=True)
    return logits - (m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True)))


def pagellm_logprobs(args, model, flags, window, tmp):
    path = os.path.join(tmp, "logits.npy")
    run([args.pagellm, "logits", "--model", model, "--prompt-ids", ",".join(map(str, window)), "--out", path, *flags],
        env=dict(os.environ, OMP_NUM_THREADS=str(args.threads)))
    return log_softmax(np.load(path))


def llama_logprobs(args, gguf, window, tmp):
    path = os.path.join(tmp, "logprobs.f32")
    run([sys.executable, os.path.join(ROOT, "tests", "gguf", "llama_cpp_eval.py"), "--model", gguf, "--tokens",
         ",".join(map(str, window)), "--top-k", "1", "--full-out-f32", path, "--threads", str(args.threads)])
    lp = np.fromfile(path, dtype=np.float32).astype(np.float64).reshape(len(window), -1)
    return lp


class Score:
    """Running sums for one (engine, format) pair."""

    def __init__(self):
        self.nll, self.kl, self.same_top1, self.n = 0.0, 0.0, 0, 0

    def add(self, lp, ref_lp, targets):
        rows = np.arange(len(targets))
        self.nll += float(-lp[rows, targets].sum())
        p = np.exp(ref_lp)
        # Where P_bf16 > 0 and P_format underflowed to 0 the divergence is infinite: report it.
        diff = np.where(p > 0, ref_lp - lp, 0.0)
        self.kl += float((p * diff).sum())
        self.same_top1 += int((lp.argmax(axis=1) == ref_lp.argmax(axis=1)).sum())
        self.n += len(targets)

    def result(self):
        return {"ppl": math.exp(self.nll / self.n), "kl": self.kl / self.n, "top1": self.same_top1 / self.n,
                "tokens": self.n}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pagellm", default=os.path.join(ROOT, "build", "pagellm"))
    ap.add_argument("--model", required=True, help="the unpacked bf16 model folder")
    ap.add_argument("--corpus", required=True, help="build_corpus.py + tokenize_corpus.mjs output (heldout.u32)")
    ap.add_argument("--work", default="/tmp/pagellm-quant-quality")
    ap.add_argument("--formats", default=DEFAULT_FORMATS)
    ap.add_argument("--group-size", type=int, default=128, help="group of the packed int4 formats")
    ap.add_argument("--window", type=int, default=128)
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-llama", action="store_true")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    formats = args.formats.split(",")
    if "bf16" not in formats:
        formats.insert(0, "bf16")
    files = make_files(args, formats)
    heldout = np.fromfile(os.path.join(args.corpus, "heldout.u32"), dtype=np.uint32).astype(np.int64)
    windows = windows_of(heldout, args.window, args.windows)
    scores = {(e, f): Score() for f in formats for e in ("pagellm", "llama.cpp")}
    with tempfile.TemporaryDirectory() as tmp:
        for wi, w in enumerate(windows):
            targets = np.array(w[1:])
            refs = {"pagellm": pagellm_logprobs(args, args.model, [], w, tmp)[:-1]}
            if not args.skip_llama:
                refs["llama.cpp"] = llama_logprobs(args, files["bf16"][2], w, tmp)[:-1]
            for f in formats:
                model, flags, gguf = files[f]
                scores[("pagellm", f)].add(pagellm_logprobs(args, model, flags, w, tmp)[:-1], refs["pagellm"], targets)
                if gguf and not args.skip_llama:
                    scores[("llama.cpp", f)].add(llama_logprobs(args, gguf, w, tmp)[:-1], refs["llama.cpp"], targets)
            print(f"window {wi + 1}/{len(windows)} scored", file=sys.stderr, flush=True)
    report = {"tokens": int(sum(len(w) - 1 for w in windows)), "formats": {}}
    for f in formats:
        entry = {"pagellm": scores[("pagellm", f)].result()}
        if scores[("llama.cpp", f)].n:
            entry["llama.cpp"] = scores[("llama.cpp", f)].result()
        model = files[f][0]
        entry["bytes"] = os.path.getsize(model) if os.path.isfile(model) else sum(
            os.path.getsize(os.path.join(model, n)) for n in os.listdir(model) if n.endswith(".safetensors"))
        report["formats"][f] = entry
    print(f"{'format':10} {'MB':>7}  {'pagellm ppl':>11} {'KL':>8} {'top1':>6}   {'llama.cpp ppl':>13} {'KL':>8} {'top1':>6}")
    for f, e in report["formats"].items():
        p = e["pagellm"]
        line = f"{f:10} {e['bytes'] / 1e6:7.1f}  {p['ppl']:11.3f} {p['kl']:8.5f} {p['top1']:6.3f}"
        if "llama.cpp" in e:
            q = e["llama.cpp"]
            line += f"   {q['ppl']:13.3f} {q['kl']:8.5f} {q['top1']:6.3f}"
        print(line)
    print(json.dumps(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)


if __name__ == "__main__":
    main()
