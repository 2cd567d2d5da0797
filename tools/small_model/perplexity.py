#!/usr/bin/env python3
"""Held-out perplexity of the small model: pagellm, llama.cpp and a unigram baseline.

    /usr/bin/python3 tools/small_model/perplexity.py --pagellm build/pagellm \
        --model models/pydoc-qwen3 --gguf /tmp/pydoc.gguf --corpus CORPUS_DIR [--windows 16]

The held-out text (build_corpus.py's heldout split, tokenized) is cut into consecutive
windows of --window tokens; every engine scores the same next tokens (positions 1..n-1 of
each window, given the ones before it):
  * pagellm: `pagellm logits` on the model folder, log-softmax over all 151,936 rows;
  * llama.cpp: node-llama-cpp on the GGUF that `pagellm convert` wrote (llama_cpp_nll.mjs);
  * unigram: token frequencies of the training text, add-one smoothed over the vocabulary.
Prints one JSON object: perplexities, mean |pagellm - llama.cpp| per token in nats, and how
many scored tokens the training text never contained.
"""
import argparse
import json
import math
import os
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB_SIZE = 151936


def windows_of(tokens, length, count):
    return [tokens[i * length:(i + 1) * length].tolist() for i in range(min(count, len(tokens) // length))]


def pagellm_nll(pagellm, model, windows, tmp):
    out = []
    for i, w in enumerate(windows):
        path = os.path.join(tmp, f"w{i}.npy")
        subprocess.run([pagellm, "logits", "--model", model, "--prompt-ids", ",".join(map(str, w)), "--out", path],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        logits = np.load(path).astype(np.float64)
        os.remove(path)
        m = logits.max(axis=1, keepdims=True)
        logz = (m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True)))[:, 0]
        targets = np.array(w[1:])
        out.append((logz[:-1] - logits[np.arange(len(w) - 1), targets]).tolist())
    return out


def llama_cpp_nll(gguf, windows, tmp):
    path = os.path.join(tmp, "windows.json")
    with open(path, "w") as f:
        json.dump(windows, f)
    res = subprocess.run(["node", os.path.join(HERE, "llama_cpp_nll.mjs"), "--model", gguf, "--windows", path],
                         check=True, capture_output=True, text=True)
    return json.loads(res.stdout)["windows"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pagellm", required=True)
    ap.add_argument("--model", required=True, help="the unpacked model folder")
    ap.add_argument("--gguf", help="its GGUF (pagellm convert); omit to skip llama.cpp")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--window", type=int, default=256)
    ap.add_argument("--windows", type=int, default=16)
    args = ap.parse_args()
    train = np.fromfile(os.path.join(args.corpus, "train.u32"), dtype=np.uint32).astype(np.int64)
    heldout = np.fromfile(os.path.join(args.corpus, "heldout.u32"), dtype=np.uint32).astype(np.int64)
    windows = windows_of(heldout, args.window, args.windows)
    counts = np.bincount(train, minlength=VOCAB_SIZE).astype(np.float64)
    unigram_logp = np.log((counts + 1) / (counts.sum() + VOCAB_SIZE))
    targets = np.concatenate([np.array(w[1:]) for w in windows])
    report = {"scored_tokens": int(len(targets)), "windows": len(windows), "window": args.window,
              "targets_absent_from_training_text": int((counts[targets] == 0).sum()),
              "unigram_perplexity": math.exp(-unigram_logp[targets].mean())}
    with tempfile.TemporaryDirectory() as tmp:
        ours = np.concatenate(pagellm_nll(args.pagellm, args.model, windows, tmp))
        report["pagellm_perplexity"] = math.exp(ours.mean())
        if args.gguf:
            ref = llama_cpp_nll(args.gguf, windows, tmp)
            ref = np.array([x if x is not None else np.inf for w in ref for x in w])
            report["llama_cpp_perplexity"] = math.exp(ref.mean())
            report["mean_abs_nll_diff_nats"] = float(np.abs(ref - ours).mean())
            report["max_abs_nll_diff_nats"] = float(np.abs(ref - ours).max())
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
