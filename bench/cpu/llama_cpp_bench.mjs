#!/usr/bin/env node
// llama.cpp side of the CPU benchmark (bench/cpu/run.py): node-llama-cpp's prebuilt CPU
// binaries (never downloads or builds), random ordinary-vocabulary prompts of exact length,
// EOS ignored (yieldEogToken), greedy sampling. Each case matches a `pagellm bench throughput`
// run with the same token counts and is timed the same way (prompt + generation, wall clock).
//
//   node bench/cpu/llama_cpp_bench.mjs --model M.gguf --case prefill --input-len 512
//   node bench/cpu/llama_cpp_bench.mjs --model M.gguf --case decode --input-len 16 --output-len 128
//   node bench/cpu/llama_cpp_bench.mjs --model M.gguf --case batch --num-seqs 16 --input-len 16 --output-len 64
//   node bench/cpu/llama_cpp_bench.mjs --model M.gguf --case ctx --input-len 8192 --output-len 32
// Prints one JSON line: {case, elapsed_s, tokens_per_s, prefill_s?, decode_tokens_per_s?}
//   prefill: tokens_per_s = input_len / time of one batched evaluation of the prompt;
//   decode / batch: tokens_per_s = generated tokens / (prompt + generation time);
//   ctx: decode_tokens_per_s = (output_len - 1) / time after the first generated token
//        (the context is already input_len long; the prompt is evaluated once).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../../.refs/package.json"));
const { getLlama, LlamaLogLevel } = await import(require.resolve("node-llama-cpp"));

function parseArgs(argv) {
  const a = { threads: 2, numSeqs: 1, inputLen: 16, outputLen: 1, seed: 0 };
  const names = { "--model": "model", "--case": "case", "--threads": "threads", "--num-seqs": "numSeqs",
                  "--input-len": "inputLen", "--output-len": "outputLen", "--seed": "seed" };
  for (let i = 0; i < argv.length; i += 2) {
    const key = names[argv[i]];
    if (!key) throw new Error(`unknown argument ${argv[i]}`);
    a[key] = ["model", "case"].includes(key) ? argv[i + 1] : Number(argv[i + 1]);
  }
  if (!a.model || !["prefill", "decode", "batch", "ctx"].includes(a.case)) {
    throw new Error("usage: llama_cpp_bench.mjs --model M.gguf --case prefill|decode|batch|ctx [...]");
  }
  return a;
}

// Deterministic xorshift so prompts are reproducible; ids below 100000 are ordinary
// byte-level BPE tokens in the Qwen vocabulary (the special tokens start at 151643).
function randomPrompt(len, seed) {
  let s = (seed * 2654435761 + 12345) >>> 0 || 1;
  const out = [];
  for (let i = 0; i < len; ++i) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out.push(1000 + (s % 99000));
  }
  return out;
}

// Generates exactly n tokens after `prompt` on `sequence`; returns the time of the first
// generated token (prompt evaluation included) relative to `start`.
async function generate(sequence, prompt, n, start) {
  let count = 0, first = 0;
  for await (const token of sequence.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
    void token;
    if (++count === 1) first = performance.now() - start;
    if (count >= n) break;
  }
  return first;
}

const args = parseArgs(process.argv.slice(2));
const llama = await getLlama({
  gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true,
  progressLogs: false, logLevel: LlamaLogLevel.error, maxThreads: args.threads,
});
const model = await llama.loadModel({ modelPath: args.model, gpuLayers: 0 });
const numSeqs = args.case === "batch" ? args.numSeqs : 1;
const context = await model.createContext({
  contextSize: numSeqs * (args.inputLen + args.outputLen + 16), sequences: numSeqs, threads: args.threads,
  batchSize: Math.max(512, Math.min(args.inputLen, 2048)),
});
const sequences = Array.from({ length: numSeqs }, () => context.getSequence());
const prompts = sequences.map((_, i) => randomPrompt(args.inputLen, args.seed * 1000 + i));
const out = { case: args.case, threads: args.threads };
const start = performance.now();
if (args.case === "prefill") {
  await sequences[0].evaluateWithoutGeneratingNewTokens(prompts[0]);
  out.elapsed_s = (performance.now() - start) / 1000;
  out.tokens_per_s = args.inputLen / out.elapsed_s;
} else {
  const firsts = await Promise.all(sequences.map((s, i) => generate(s, prompts[i], args.outputLen, start)));
  out.elapsed_s = (performance.now() - start) / 1000;
  out.tokens_per_s = (numSeqs * args.outputLen) / out.elapsed_s;
  if (args.case === "ctx") {
    out.prefill_s = firsts[0] / 1000;
    out.decode_tokens_per_s = (args.outputLen - 1) / (out.elapsed_s - out.prefill_s);
  }
}
console.log(JSON.stringify(out));
await context.dispose();
await model.dispose();
