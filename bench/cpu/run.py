#!/usr/bin/python3
"""CPU benchmark: pagellm vs llama.cpp (node-llama-cpp) on the same dummy Qwen3-0.6B weights.

  /usr/bin/python3 bench/cpu/run.py [--pagellm build/pagellm] [--quick] [--runs 3]
        [--work /tmp/pagellm-bench] [--ctx-len 8192] [--only bf16,int8,q8_0] [--json out.json]

Builds the checkpoint once (`pagellm make-dummy-model --preset qwen3-0.6b`, or --preset), converts
it with `pagellm convert --outtype f16|bf16|q8_0` (rows q4_k_m, q5_k_m, q6_k, iq4_xs, q4_0:
llama.cpp's own quantizer on the F16 file, tests/parity/llama_quantize.py; rows awq, gptq: the
reference packer's int4 checkpoints, group 128, tests/quant/hf_quant_packer.py), measures the machine's ceilings (bench/cpu/ceilings.c:
DRAM read bandwidth, vdpbf16ps peak; before every row and case and after the last, the
run's highest used) and,
for each precision row and case, runs pagellm
(`pagellm bench throughput`) and llama.cpp (bench/cpu/llama_cpp_bench.mjs), 2 threads each:
  prefill  1 prompt of 512 tokens, 1 generated          -> prompt tokens/s
  decode   1 prompt of 16 tokens, 128 generated          -> generated tokens/s
  batch    16 prompts of 16 tokens, 64 generated each    -> generated tokens/s
  ctx      1 prompt of --ctx-len tokens, 33 generated   -> decode tokens/s at that context,
           timed after the first generated token (pagellm: `pagellm generate`'s timing line)
  taken    "one core taken": decode and batch again while a busy loop pinned to core 1
           (taskset) competes with both engines' 2 threads -> slowdown = idle / taken
           tokens/s for each (idle figures from the decode/batch cases of the same run)
Row q8_0-inplace is q8_0 with PAGELLM_Q8_0_REPACK=0 (weights read in place from the file:
the GEMV and the per-call-repacking GEMM that preceded the load-time repack); row q8_0-gemv
also sets PAGELLM_Q8_0_GEMM=0 (every batch size on that GEMV, the path before any GEMM).
Row bf16-inplace is bf16 with PAGELLM_BF16_REPACK=0 (the GEMV on the file's rows and oneDNN's
packed copy, the path before the load-time bf16 repack). Rows q4_k_m-vnni (PAGELLM_AMX=0: no
AMX tiles for k-quant batches) and q4_k_m-tile-decode (PAGELLM_KQUANT_UNPACK=0) are q4_k_m's
A/B rows. None of these has a llama.cpp column
of its own (compare with q8_0's / bf16's).
Every figure is the median of --runs runs (1 with --quick); the load average is recorded with
each run. Prints a table with pagellm/llama.cpp ratios and the fraction of the ceiling:
decode/ctx vs read bandwidth / bytes read per step (weights, plus KV for ctx); batch vs the
lower of that x 16 and the compute peak / multiply-adds per token; prefill vs the compute
peak: vdpbf16ps for bf16 rows, vpdpbusd for int8 and k-quant rows (without AMX). Not a test:
nothing asserts a time.
"""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# pagellm picks its own OpenMP wait policy and pinning (src/cli/main.cc); llama.cpp has its own pool.
THREAD_ENV = {"OMP_NUM_THREADS": "2"}

# Precision rows: pagellm model + flags, and the llama.cpp GGUF types it is compared with.
ROWS = {
    "bf16": {"model": "hf", "flags": [], "llama": ["f16", "bf16"], "weight_bytes": "bf16"},
    "bf16-inplace": {"model": "hf", "flags": [], "llama": [], "weight_bytes": "bf16",
                     "env": {"PAGELLM_BF16_REPACK": "0"}},
    "int8": {"model": "hf", "flags": ["--quantization", "int8"], "llama": ["q8_0"], "weight_bytes": "int8"},
    "q8_0": {"model": "q8_0", "flags": [], "llama": ["q8_0"], "weight_bytes": "q8_0"},
    "q8_0-inplace": {"model": "q8_0", "flags": [], "llama": [], "weight_bytes": "q8_0",
                     "env": {"PAGELLM_Q8_0_REPACK": "0"}},
    "q8_0-gemv": {"model": "q8_0", "flags": [], "llama": [], "weight_bytes": "q8_0",
                  "env": {"PAGELLM_Q8_0_REPACK": "0", "PAGELLM_Q8_0_GEMM": "0"}},
    # llama.cpp's own quantizer on the F16 file (tests/parity/llama_quantize.py); both engines
    # read that one file. Ceiling bytes per token = the file's size.
    **{t: {"model": t, "flags": [], "llama": [t], "weight_bytes": t}
       for t in ("q4_k_m", "q5_k_m", "q6_k", "iq4_xs", "q4_0")},
    # Hugging Face int4 checkpoints made by the reference packer (tests/quant/hf_quant_packer.py,
    # group 128) from the bf16 checkpoint; llama.cpp cannot read them, so no llama.cpp column:
    # compare their fraction of the ceiling (bytes = the checkpoint's safetensors) with q4_k_m's.
    **{t: {"model": t, "flags": [], "llama": [], "weight_bytes": t} for t in ("awq", "gptq")},
    # A/B rows of the k-quant GEMM (compare with q4_k_m's own row): without the AMX tiles (the
    # AVX-512 VNNI kernels; the same as q4_k_m where the CPU has no AMX), and with every tile
    # decoding its records instead of the codes unpacked once per call.
    "q4_k_m-vnni": {"model": "q4_k_m", "flags": [], "llama": [], "weight_bytes": "q4_k_m",
                    "env": {"PAGELLM_AMX": "0"}},
    "q4_k_m-tile-decode": {"model": "q4_k_m", "flags": [], "llama": [], "weight_bytes": "q4_k_m",
                           "env": {"PAGELLM_KQUANT_UNPACK": "0"}},
}
# Rows whose GGUF is made by llama.cpp's quantizer from the F16 file.
LLAMA_QUANTIZED = ("q4_k_m", "q5_k_m", "q6_k", "iq4_xs", "q4_0")
# Rows whose checkpoint the reference packer makes: (packer --format, extra flags).
HF_PACKED = {"awq": ("awq", []), "gptq": ("gptq", [])}
TAKEN_CASES = ("decode", "batch")


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def sh(cmd, env=None):
    full_env = dict(os.environ, **(env or {}))
    res = subprocess.run(cmd, env=full_env, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-3000:]}")
    return res.stdout


def safetensors_bytes(folder):
    return sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder) if n.endswith(".safetensors"))


def prepare(args):
    os.makedirs(args.work, exist_ok=True)
    only = args.only.split(",")
    hf = os.path.join(args.work, args.preset)
    if not os.path.exists(os.path.join(hf, "config.json")):
        sh([args.pagellm, "make-dummy-model", "--preset", args.preset, "--out", hf])
    ggufs = {}
    # F16 feeds llama.cpp's quantizer; BF16 / Q8_0 only when a row reads them.
    wanted = {"f16"} | {t for r in only for t in ROWS[r]["llama"] + [ROWS[r]["model"]] if t in ("f16", "bf16", "q8_0")}
    for t in sorted(wanted):
        ggufs[t] = os.path.join(args.work, f"{args.preset}-{t}.gguf")
        if not os.path.exists(ggufs[t]):
            sh([args.pagellm, "convert", hf, "--outtype", t, "--outfile", ggufs[t]])
    models = {ROWS[r]["model"] for r in only}
    for t in [t for t in LLAMA_QUANTIZED if t in models]:  # ~1 min each for qwen3-0.6b on an idle machine
        ggufs[t] = os.path.join(args.work, f"{args.preset}-{t}.gguf")
        if not os.path.exists(ggufs[t]):
            sh([sys.executable, os.path.join(ROOT, "tests", "parity", "llama_quantize.py"), ggufs["f16"], ggufs[t], t])
    for t in [t for t in HF_PACKED if t in models]:
        fmt_name, extra = HF_PACKED[t]
        ggufs[t] = os.path.join(args.work, f"{args.preset}-{t}-g128")  # a checkpoint folder, not a GGUF
        if not os.path.exists(os.path.join(ggufs[t], "config.json")):
            sh([sys.executable, os.path.join(ROOT, "tests", "quant", "hf_quant_packer.py"), "--in", hf, "--format",
                fmt_name, "--group-size", "128", *extra, "--out", ggufs[t], "--dequantized-out",
                ggufs[t] + "-dequantized"])
            shutil.rmtree(ggufs[t] + "-dequantized")  # the fidelity tests' twin; not benchmarked
    exe = os.path.join(args.work, "ceilings")
    sh(["gcc", "-O2", "-march=native", "-fopenmp", os.path.join(HERE, "ceilings.c"), "-o", exe])
    return hf, ggufs, exe


def model_bytes(hf, ggufs):
    """Bytes streamed per decode step for each row, and KV bytes per context token."""
    with open(os.path.join(hf, "config.json")) as f:
        c = json.load(f)
    bf16 = safetensors_bytes(hf)  # tied: embed read as lm_head
    kv_per_token = c["num_hidden_layers"] * 2 * c["num_key_value_heads"] * c["head_dim"] * 2
    return {"bf16": bf16, "int8": bf16 / 2, **{t: os.path.getsize(ggufs[t]) for t in ("q8_0",) if t in ggufs},
            **{t: os.path.getsize(ggufs[t]) for t in LLAMA_QUANTIZED if t in ggufs},
            **{t: safetensors_bytes(ggufs[t]) for t in HF_PACKED if t in ggufs},
            "kv_per_token": kv_per_token, "params": bf16 / 2,
            "embed_params": c["vocab_size"] * c["hidden_size"],
            "tied": bool(c.get("tie_word_embeddings", False))}


# Rows whose batches and prefill run on vpdpbusd (int8 activations x int8 or packed 4-6 bit
# weights): their compute ceiling is the VNNI peak (ceilings.c), where the CPU has no AMX.
VNNI_ROWS = {"int8", "q8_0", "q8_0-inplace", "q8_0-gemv", *LLAMA_QUANTIZED, *HF_PACKED, "q4_k_m-vnni",
             "q4_k_m-tile-decode"}


def macs_per_token(b, lm_head):
    """Multiply-adds of one token through the linears: every layer's weights, and the lm_head's
    when lm_head (a decode step's every row; a prefill computes it for the last row only)."""
    layers = b["params"] - b["embed_params"] * (1 if b["tied"] else 2)
    return layers + (b["embed_params"] if lm_head else 0)


def pagellm_run(args, model, flags, num_prompts, input_len, output_len, seed, env=None):
    out_json = os.path.join(args.work, "pagellm_result.json")
    max_len = input_len + output_len + 16
    cmd = [args.pagellm, "bench", "throughput", "--model", model, "--num-prompts", str(num_prompts),
           "--input-len", str(input_len), "--output-len", str(output_len), "--seed", str(seed),
           "--output-json", out_json, "--max-model-len", str(max_len),
           "--kv-cache-memory", str(int(num_prompts * max_len * 120000 + (64 << 20)))] + flags
    sh(cmd, dict(THREAD_ENV, **(env or {})))
    with open(out_json) as f:
        return json.load(f)["elapsed_time"]


def pagellm_case(args, model, flags, case, seed, env=None):
    """Returns the case's figure (tokens/s) for one run."""
    if case == "prefill":
        return 512 / pagellm_run(args, model, flags, 1, 512, 1, seed, env)
    if case == "decode":
        return args.decode_len / pagellm_run(args, model, flags, 1, 16, args.decode_len, seed, env)
    if case == "batch":
        return 16 * args.batch_len / pagellm_run(args, model, flags, 16, 16, args.batch_len, seed, env)
    return pagellm_ctx_decode(args, model, flags, seed, env)


def random_prompt(length, seed):
    """Ordinary byte-level BPE ids (the Qwen special tokens start at 151643)."""
    rng = random.Random(seed)
    return [rng.randrange(1000, 100000) for _ in range(length)]


def pagellm_ctx_decode(args, model, flags, seed, env=None):
    """Decode tok/s after a --ctx-len prompt, from `pagellm generate`'s timing line (it times
    generated tokens after the first, so the long prefill's run-to-run noise stays out)."""
    max_len = args.ctx_len + 48
    ids = ",".join(map(str, random_prompt(args.ctx_len, seed)))
    cmd = [args.pagellm, "generate", "--model", model, "--prompt-ids", ids, "--max-tokens", "33",
           "--min-tokens", "33", "--ignore-eos", "--temperature", "0", "--max-model-len", str(max_len),
           "--kv-cache-memory", str(int(max_len * 120000 + (64 << 20))), "--output-format", "json"] + flags
    res = subprocess.run(cmd, env=dict(os.environ, **THREAD_ENV, **(env or {})), capture_output=True, text=True)
    m = re.search(r"output (\d+) tokens .*decode ([0-9.]+) tokens/s", res.stderr + res.stdout)
    if res.returncode != 0 or not m or int(m.group(1)) != 33:
        sys.exit(f"pagellm generate failed ({res.returncode}):\n{res.stderr[-3000:]}")
    return float(m.group(2))


def llama_case(args, gguf, case, seed):
    spec = {"prefill": ["--input-len", "512"], "decode": ["--input-len", "16", "--output-len", str(args.decode_len)],
            "batch": ["--num-seqs", "16", "--input-len", "16", "--output-len", str(args.batch_len)],
            "ctx": ["--input-len", str(args.ctx_len), "--output-len", "33"]}[case]
    out = sh(["node", os.path.join(HERE, "llama_cpp_bench.mjs"), "--model", gguf, "--case", case,
              "--threads", "2", "--seed", str(seed)] + spec)
    r = json.loads(out.strip().splitlines()[-1])
    return r["decode_tokens_per_s"] if case == "ctx" else r["tokens_per_s"]


def median_of(fn, runs, log, label):
    values, loads = [], []
    for i in range(runs):
        loads.append(load())
        values.append(fn(i))
        print(f"  {label} run {i + 1}/{runs}: {values[-1]:.2f} tok/s (load {loads[-1]:.2f})", flush=True)
    log.append({"label": label, "values": values, "loads": loads})
    return statistics.median(values), statistics.median(loads)


def ceiling(case, row, b, ceil, ctx_len):
    """Upper bound in tokens/s for the case, or None when no single ceiling applies."""
    bw = ceil["read_gbps"] * 1e9
    weights = b[ROWS[row]["weight_bytes"]]
    if case == "decode":
        return bw / weights
    # Compute: the vdpbf16ps peak for bf16 rows, the vpdpbusd peak for int8 and k-quant rows
    # (None where it does not apply, e.g. with AMX, whose peak ceilings.c does not measure).
    if row == "bf16" and ceil["bf16_gflops"] > 0:
        peak = ceil["bf16_gflops"] * 1e9 / 2
    elif row in VNNI_ROWS and ceil.get("vnni_gmacs", 0) > 0 and not ceil["amx"]:
        peak = ceil["vnni_gmacs"] * 1e9
    else:
        peak = None
    if case == "batch":  # bound by the read or by the arithmetic of 16 rows, whichever is lower
        memory = 16 * bw / weights
        return min(memory, peak / macs_per_token(b, lm_head=True)) if peak else memory
    if case == "ctx":
        return bw / (weights + ctx_len * b["kv_per_token"])
    return peak / macs_per_token(b, lm_head=False) if peak else None


def run_case(args, row, case, models, ggufs, runs, log, suffix=""):
    """Median tok/s of pagellm and of each llama.cpp type for one row and case."""
    r = ROWS[row]
    pg, pg_load = median_of(lambda i: pagellm_case(args, models[r["model"]], r["flags"], case, i, r.get("env")),
                            runs, log, f"pagellm {row} {case}{suffix}")
    refs = {}
    for t in ([] if args.skip_llama else r["llama"]):
        refs[t] = median_of(lambda i: llama_case(args, ggufs[t], case, i), runs, log, f"llama.cpp {t} {case}{suffix}")[0]
    return pg, pg_load, refs


class BusyCore:
    """A busy loop pinned to one core (taskset) for the length of a `with` block: the
    "one core taken by another process" scenario. Ends only the process it started."""

    def __init__(self, core):
        self.core = core

    def __enter__(self):
        self.proc = subprocess.Popen(["taskset", "-c", str(self.core), "sh", "-c", "while :; do :; done"])
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def run_taken(args, row, models, ggufs, table, runs, log):
    """Decode and batch with one core taken; slowdown against the idle figures (from the
    table when those cases ran, else measured here first)."""
    out = []
    for case in TAKEN_CASES:
        idle = next((t for t in table if t["row"] == row and t["case"] == case), None)
        if idle is None:
            pg, pg_load, refs = run_case(args, row, case, models, ggufs, runs, log)
            idle = {"pagellm": pg, "llama": refs}
        with BusyCore(os.cpu_count() - 1):
            pg, pg_load, refs = run_case(args, row, case, models, ggufs, runs, log, " (1 core taken)")
        out.append({"row": row, "case": case, "pagellm": pg, "load": pg_load, "llama": refs,
                    "pagellm_slowdown": idle["pagellm"] / pg,
                    "llama_slowdown": {t: idle["llama"][t] / v for t, v in refs.items()}})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pagellm", default=os.path.join(ROOT, "build", "pagellm"))
    p.add_argument("--work", default="/tmp/pagellm-bench")
    p.add_argument("--preset", default="qwen3-0.6b", help="dummy model shape (e.g. qwen3-8b: ~16 GB bf16 on disk)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="1 run of everything")
    p.add_argument("--ctx-len", type=int, default=8192)
    p.add_argument("--decode-len", type=int, default=128, help="tokens generated in the decode case")
    p.add_argument("--batch-len", type=int, default=64, help="tokens generated per sequence in the batch case")
    p.add_argument("--only", default="bf16,int8,q8_0",
                   help="precision rows to run (also bf16-inplace, q8_0-inplace, q8_0-gemv, q4_k_m, q5_k_m, "
                        "q6_k, iq4_xs, q4_0, awq, gptq)")
    p.add_argument("--cases", default="prefill,decode,batch,ctx,taken")
    p.add_argument("--json", default="", help="write every run's figures and loads here")
    p.add_argument("--skip-llama", action="store_true", help="pagellm only (e.g. to compare two pagellm builds)")
    args = p.parse_args()
    runs = 1 if args.quick else args.runs
    hf, ggufs, ceil_exe = prepare(args)
    b = model_bytes(hf, ggufs)
    # The ceilings are measured before every row and case, and the run's highest are used: on
    # a shared host one measurement taken while a neighbour reads can fall below what the
    # engines stream minutes later (a 35 GB/s ceiling with pagellm's decode at 43 GB/s gave
    # fractions of 1.2); noise only ever lowers a ceiling, so the highest is the fairest.
    measured = []

    def measure_ceilings():
        c = json.loads(sh([ceil_exe], {"OMP_NUM_THREADS": "2", "OMP_PROC_BIND": "true"}))
        print(f"ceilings (2 threads, load {load():.2f}): {json.dumps(c)}", flush=True)
        measured.append(c)

    models = {"hf": hf, **{t: ggufs[t] for t in ("q8_0",) + LLAMA_QUANTIZED + tuple(HF_PACKED) if t in ggufs}}
    table, taken, log = [], [], []
    for row in args.only.split(","):
        for case in args.cases.split(","):
            measure_ceilings()
            if case == "taken":
                taken += run_taken(args, row, models, ggufs, table, runs, log)
                continue
            pg, pg_load, refs = run_case(args, row, case, models, ggufs, runs, log)
            table.append({"row": row, "case": case, "pagellm": pg, "load": pg_load, "llama": refs})
    measure_ceilings()  # and once after the last
    ceil = {k: max(c.get(k, 0) for c in measured) for k in ("read_gbps", "triad_gbps", "bf16_gflops", "vnni_gmacs", "amx")}
    ceil["read_gbps_measured"] = [c["read_gbps"] for c in measured]
    for t in table:
        t["ceiling"] = ceiling(t["case"], t["row"], b, ceil, args.ctx_len)
    print_table(table, ceil, args, runs)
    print_taken(taken, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ceilings": ceil, "bytes": b, "table": table, "taken": taken, "runs": log,
                       "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, f, indent=2)


def print_table(table, ceil, args, runs):
    names = {"prefill": "prefill 512 (prompt tok/s)", "decode": f"decode 1 seq x{args.decode_len} (tok/s)",
             "batch": f"16 seqs x {args.batch_len} (output tok/s)", "ctx": f"decode at {args.ctx_len} ctx (tok/s)"}
    print(f"\nmedians of {runs} run(s); ceilings (the run's highest): read {ceil['read_gbps']} GB/s "
          f"(measured {', '.join(f'{g:.2f}' for g in ceil['read_gbps_measured'])}), "
          f"bf16 {ceil['bf16_gflops']} GFLOP/s, vpdpbusd {ceil['vnni_gmacs']} G int8 MAC/s, "
          f"AMX {'yes' if ceil['amx'] else 'no'}")
    w = max([9] + [len(t["row"]) for t in table])
    print(f"{'row':{w}} {'case':30} {'pagellm':>9} {'load':>5}  {'llama.cpp (type: tok/s, pagellm/llama)':42} "
          f"{'ceiling':>8} {'frac':>5}")
    for t in table:
        refs = ", ".join(f"{k}: {v:.2f} {t['pagellm'] / v:.2f}x" for k, v in t["llama"].items())
        cap = t["ceiling"]
        cap_s = f"{cap:8.1f} {t['pagellm'] / cap:5.2f}" if cap else f"{'-':>8} {'-':>5}"
        print(f"{t['row']:{w}} {names[t['case']]:30} {t['pagellm']:9.2f} {t['load']:5.2f}  {refs:42} {cap_s}")


def print_taken(taken, args):
    if not taken:
        return
    names = {"decode": f"decode 1 seq x{args.decode_len}", "batch": f"16 seqs x {args.batch_len}"}
    print("\none core taken (busy loop pinned to the last core; slowdown = idle / taken tok/s)")
    print(f"{'row':9} {'case':18} {'pagellm':>9} {'slowdown':>8} {'load':>5}  llama.cpp (type: tok/s, slowdown)")
    for t in taken:
        refs = ", ".join(f"{k}: {v:.2f} {t['llama_slowdown'][k]:.2f}x" for k, v in t["llama"].items())
        print(f"{t['row']:9} {names[t['case']]:18} {t['pagellm']:9.2f} {t['pagellm_slowdown']:7.2f}x "
              f"{t['load']:5.2f}  {refs}")


if __name__ == "__main__":
    main()
