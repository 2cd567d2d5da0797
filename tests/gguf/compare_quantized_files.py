#!/usr/bin/python3
"""CTest gguf_quantized_matches_llama_quantize_*: `pagellm convert --outtype FTYPE` against
llama.cpp's llama-quantize on the same F16 file, byte for byte.

For a dummy checkpoint (`pagellm make-dummy-model --preset P`):
  1. pagellm convert DIR --outtype f16                  -> f16.gguf
  2. llama_model_quantize(f16.gguf, FTYPE)              -> ref.gguf   (tests/parity/llama_quantize.py)
  3. pagellm convert DIR --outtype FTYPE                -> ours.gguf  (from the checkpoint directly)
  4. pagellm convert f16.gguf --outtype FTYPE           -> ours_from_f16.gguf
and requires, for 3 and 4: the same tensors in the same order with the same types, dims and data
bytes, the same metadata (general.file_type included), and in the end the whole file identical.
(q8_0 is checked from f16.gguf only: from a checkpoint `--outtype q8_0` is convert_hf_to_gguf's,
quantized from float32, not llama-quantize's.) With --llama-cpp, llama.cpp (node-llama-cpp's
libllama, tests/gguf/llama_cpp_eval.py) must also load each of pagellm's files and give finite
next-token logprobs at every position.

  /usr/bin/python3 tests/gguf/compare_quantized_files.py --pagellm build/pagellm --workdir W \
      --preset qwen3-tiny-k --ftypes q4_k_m,q6_k

Steps 1 and 2 (the inputs: the checkpoint, f16.gguf and ref.gguf of every file type) are made
in --workdir, or once for several tests by `--prepare --workdir D --ftypes ALL` (a CTest fixture,
src/gguf/CMakeLists.txt) and then read from D with `--inputs D`; the gguf_parity tests of the
same preset read their checkpoint and llama-quantize's files from D too (gguf_parity.py
--inputs), so the names are gguf_parity.py's: D/PRESET, D/PRESET-f16.gguf, D/PRESET-FTYPE.gguf.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LLAMA_QUANTIZE = os.path.join(HERE, "..", "parity", "llama_quantize.py")

SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
TYPE_NAMES = {0: "f32", 1: "f16", 2: "q4_0", 6: "q5_0", 7: "q5_1", 8: "q8_0", 12: "q4_K", 13: "q5_K", 14: "q6_K",
              20: "iq4_nl", 23: "iq4_xs", 30: "bf16"}
# (elements, bytes) per block
BLOCKS = {0: (1, 4), 1: (1, 2), 30: (1, 2), 2: (32, 18), 6: (32, 22), 7: (32, 24), 8: (32, 34), 20: (32, 18),
          12: (256, 144), 13: (256, 176), 14: (256, 210), 23: (256, 136)}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        value = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return value

    def string(self):
        n = self.take("<Q")
        self.pos += n
        return self.data[self.pos - n:self.pos].decode("utf-8", errors="replace")

    def value(self, vtype):
        if vtype == 8:
            return self.string()
        if vtype == 9:
            elem, count = self.take("<I"), self.take("<Q")
            return (elem, [self.value(elem) for _ in range(count)])
        return self.take(SCALAR[vtype])


def parse_gguf(path):
    """-> (metadata [(key, type, value)], tensors [(name, ne, type, bytes)], raw file bytes)"""
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    assert r.take("<I") == 0x46554747, f"{path}: not a GGUF file"
    r.take("<I")
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    metadata = []
    for _ in range(n_kv):
        key = r.string()
        vtype = r.take("<I")
        metadata.append((key, vtype, r.value(vtype)))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        ne = [r.take("<Q") for _ in range(r.take("<I"))]
        infos.append((name, ne, r.take("<I"), r.take("<Q")))
    align = next((v for k, _, v in metadata if k == "general.alignment"), 32)
    base = (r.pos + align - 1) // align * align
    tensors = []
    for name, ne, ttype, offset in infos:
        count = 1
        for d in ne:
            count *= d
        elems, nbytes = BLOCKS[ttype]
        size = count // elems * nbytes
        tensors.append((name, ne, ttype, data[base + offset:base + offset + size]))
    return metadata, tensors, data


def run(cmd, log):
    start = time.time()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log.append(f"$ {' '.join(cmd)}  ({time.time() - start:.1f} s)")
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-3000:]}")
    return time.time() - start


def llama_cpp_loads(gguf, log):
    """Problems (empty: none) running llama.cpp on `gguf` (tests/gguf/llama_cpp_eval.py)."""
    cmd = [sys.executable, os.path.join(HERE, "llama_cpp_eval.py"), "--model", gguf, "--text", "Hello, world! 12345",
           "--top-k", "5", "--threads", "2"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log.append(f"$ {' '.join(cmd)}")
    if proc.returncode != 0:
        return [f"llama.cpp failed on {gguf}: {proc.stderr[-2000:]}"]
    positions = json.loads(proc.stdout)["positions"]
    if not positions or not all(math.isfinite(lp) for p in positions for _, lp in p["top"]):
        return [f"llama.cpp gave no or non-finite logprobs on {gguf}"]
    return []


def compare(ours_path, ref_path):
    """Returns a list of differences (empty when the files are the same)."""
    ours_kv, ours_t, ours_raw = parse_gguf(ours_path)
    ref_kv, ref_t, ref_raw = parse_gguf(ref_path)
    problems = []
    if [k for k, _, _ in ours_kv] != [k for k, _, _ in ref_kv]:
        problems.append(f"metadata keys differ: ours {[k for k, _, _ in ours_kv][-4:]} ref {[k for k, _, _ in ref_kv][-4:]}")
    ref_kv_map = {k: (t, v) for k, t, v in ref_kv}
    for k, t, v in ours_kv:
        if k in ref_kv_map and ref_kv_map[k] != (t, v):
            shown = str(v)[:80]
            problems.append(f"metadata {k}: ours {shown} ref {str(ref_kv_map[k][1])[:80]}")
    if [t[0] for t in ours_t] != [t[0] for t in ref_t]:
        problems.append("tensor order differs")
    ref_by_name = {t[0]: t for t in ref_t}
    for name, ne, ttype, data in ours_t:
        ref = ref_by_name.get(name)
        if ref is None:
            problems.append(f"{name}: missing in llama-quantize's file")
            continue
        if (ne, ttype) != (ref[1], ref[2]):
            problems.append(f"{name}: ours {TYPE_NAMES.get(ttype)} {ne}, llama.cpp {TYPE_NAMES.get(ref[2])} {ref[1]}")
        elif data != ref[3]:
            first = next(i for i in range(len(data)) if data[i] != ref[3][i])
            nbytes = BLOCKS[ttype][1]
            problems.append(f"{name} ({TYPE_NAMES.get(ttype)}): data differs from byte {first} (block {first // nbytes}), "
                            f"{sum(a != b for a, b in zip(data, ref[3]))} bytes")
    if not problems and ours_raw != ref_raw:
        first = next(i for i in range(min(len(ours_raw), len(ref_raw))) if ours_raw[i] != ref_raw[i])
        problems.append(f"files differ at byte {first} (sizes {len(ours_raw)} / {len(ref_raw)})")
    types = {}
    for _, _, ttype, _ in ref_t:
        types[TYPE_NAMES.get(ttype)] = types.get(TYPE_NAMES.get(ttype), 0) + 1
    return problems, types


def input_paths(inputs, preset):
    """The dummy checkpoint and its F16 file in `inputs`, and the path of llama-quantize's file of a type."""
    return (os.path.join(inputs, preset), os.path.join(inputs, f"{preset}-f16.gguf"),
            lambda ftype: os.path.join(inputs, f"{preset}-{ftype}.gguf"))


def make_inputs(args, inputs, log):
    """Steps 1 and 2 for every one of --ftypes, in `inputs`; returns {ftype: llama-quantize's seconds}."""
    model, f16, ref = input_paths(inputs, args.preset)
    run([args.pagellm, "make-dummy-model", "--preset", args.preset, "--out", model, "--seed", "11"], log)
    run([args.pagellm, "convert", model, "--outtype", "f16", "--outfile", f16], log)
    return {ftype: run([sys.executable, LLAMA_QUANTIZE, f16, ref(ftype), ftype, "--threads", str(args.threads)], log)
            for ftype in args.ftypes.split(",")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pagellm", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--preset", required=True)
    ap.add_argument("--ftypes", required=True, help="comma-separated llama-quantize file types, e.g. q4_k_m,q6_k")
    ap.add_argument("--sources", default="checkpoint,gguf",
                    help="what pagellm quantizes: the checkpoint directory, f16.gguf, or both")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--llama-cpp", action="store_true", help="also run llama.cpp on pagellm's files")
    ap.add_argument("--prepare", action="store_true",
                    help="only make the checkpoint, f16.gguf and llama-quantize's file of each of --ftypes in --workdir")
    ap.add_argument("--inputs", help="read those from this directory (made by --prepare) instead of making them")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    log = []
    if args.inputs:
        model, f16, ref_path = input_paths(args.inputs, args.preset)
        t_refs = {}
        missing = [p for p in [model, f16] + [ref_path(t) for t in args.ftypes.split(",")] if not os.path.exists(p)]
        if missing:
            sys.exit(f"--inputs {args.inputs} lacks {missing} (made by --prepare with these --ftypes)")
    else:
        t_refs = make_inputs(args, args.workdir, log)
        model, f16, ref_path = input_paths(args.workdir, args.preset)
    if args.prepare:
        print(f"{args.preset}: checkpoint, f16.gguf and llama-quantize's " +
              ", ".join(f"{t} ({s:.1f} s)" for t, s in t_refs.items()) + f" in {args.workdir}")
        return
    failures = 0
    for ftype in args.ftypes.split(","):
        ref = ref_path(ftype)
        t_ref = f"{t_refs[ftype]:.1f} s" if ftype in t_refs else "made by --prepare"
        sources = [(model, "checkpoint"), (f16, "gguf")]
        for source, label in [(s, l) for s, l in sources if l in args.sources.split(",")]:
            if ftype == "q8_0" and label == "checkpoint":
                continue
            ours = os.path.join(args.workdir, f"ours-{ftype}-from-{label}.gguf")
            t_ours = run([args.pagellm, "convert", source, "--outtype", ftype, "--outfile", ours], log)
            problems, types = compare(ours, ref)
            if args.llama_cpp:
                problems += llama_cpp_loads(ours, log)
            status = "byte-identical" if not problems else f"{len(problems)} problem(s)"
            status += ", llama.cpp loads it" if args.llama_cpp and not problems else ""
            print(f"{args.preset} {ftype} from the {label}: {status}; llama.cpp's types {types}; "
                  f"llama-quantize {t_ref}, pagellm {t_ours:.1f} s")
            for p in problems[:20]:
                print(f"    {p}")
            failures += 1 if problems else 0
    if failures:
        print("\n".join(log))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
