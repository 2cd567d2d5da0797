#!/usr/bin/python3
"""CTest gguf_quants_match_gguf_py: pagellm's dequantization and Q8_0 quantizer against
llama.cpp's own gguf-py (numpy reference implementations of the block formats, the code
convert_hf_to_gguf.py uses for --outtype q8_0), bit for bit. gguf-py's GGUFReader also
reads the file, which checks our writer against a second independent reader.

gguf-py is taken from the llama.cpp source that node-llama-cpp ships (its git bundle, the
exact release its binaries were built from), so no download is needed.

  /usr/bin/python3 tests/gguf/check_with_gguf_py.py GGUF_TEST_TOOL OUT_DIR LLAMA_CPP_BUNDLE
"""
import os
import subprocess
import sys

import numpy as np


def extract_gguf_py(bundle, out_dir):
    repo = os.path.join(out_dir, "llama.cpp-src")
    if not os.path.isdir(os.path.join(repo, "gguf-py", "gguf")):
        subprocess.run(["git", "init", "-q", repo], check=True)
        subprocess.run(["git", "-C", repo, "fetch", "-q", os.path.abspath(bundle), "HEAD"], check=True)
        subprocess.run(["git", "-C", repo, "checkout", "-q", "FETCH_HEAD", "--", "gguf-py"], check=True)
    sys.path.insert(0, os.path.join(repo, "gguf-py"))


def main():
    tool, out_dir, bundle = sys.argv[1:4]
    os.makedirs(out_dir, exist_ok=True)
    extract_gguf_py(bundle, out_dir)
    from gguf import GGUFReader, GGMLQuantizationType as Q, quants  # noqa: E402

    path = os.path.join(out_dir, "quant_vectors.gguf")
    subprocess.run([tool, "quant-vectors", path], check=True)
    tensors = {t.name: t for t in GGUFReader(path).tensors}
    failures = 0
    for name in [n for n in tensors if n.startswith("raw.")]:
        raw = tensors[name]
        ours = np.asarray(tensors["deq." + name[4:]].data, dtype=np.float32).reshape(-1)
        ref = quants.dequantize(np.asarray(raw.data), Q(raw.tensor_type)).astype(np.float32).reshape(-1)
        same = np.array_equal(ours.view(np.uint32), ref.view(np.uint32))
        print(f"{name[4:]:5s}: {ours.size} values, bit-exact={same}, max|diff|={np.max(np.abs(ours - ref)):.3g}")
        failures += 0 if same else 1
    src = np.asarray(tensors["q8_src"].data, dtype=np.float32)
    ref_q = quants.quantize(src, Q.Q8_0).reshape(-1)
    ours_q = np.asarray(tensors["q8_ours"].data).reshape(-1)
    same = np.array_equal(ours_q, ref_q)
    print(f"q8_0 quantizer: {src.size} values, byte-exact={same}, differing bytes={int(np.sum(ours_q != ref_q))}")
    failures += 0 if same else 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
