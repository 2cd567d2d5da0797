#!/usr/bin/env node
// Loads a GGUF with llama.cpp (node-llama-cpp's prebuilt CPU binaries; never downloads or
// builds anything) and prints, as JSON, the next-token distribution after every position
// of a token sequence: the logits reference for pagellm's parity tests.
//
//   node tests/gguf/llama_cpp_eval.mjs --model M.gguf --tokens 9707,11,1879 [--top-k 10]
//        [--full-out logprobs.json] [--full-out-f32 logprobs.f32] [--text "Hello"] [--threads 2]
//        [--generate 64 [--generate-argmax]] [--flash-attention auto|on|off] [--kv-type F16|F32|BF16|Q8_0]
//
// Output: {n_vocab, tokens, text_tokens?, positions: [{pos, argmax, top: [[id, logprob], ...]}],
//          generated?: [id, ...], generated_top?: [[[id, logprob] x2], ...]}
// --generate N continues greedily (argmax, end-of-generation tokens ignored) for N tokens,
// one token per decode call as a server would; generated_top[i] is the top-2 that chose
// generated[i]. With --generate-argmax each step takes the sampler's own temperature-0 token
// and no probability map (generated_top is then absent): the map of a 151,936-entry
// vocabulary costs ~120 ms per token on a 2-core Zen 5, 85% of a 64-token run.
// node-llama-cpp exposes no raw logits; with temperature 0 its sampler returns softmax over
// the full vocabulary of the raw logits, so logprob = log(p) = logit - logsumexp(logits)
// (comparisons should use log_softmax of pagellm's logits). --full-out writes every
// position's full logprob vector (n_vocab floats, -Infinity written as null);
// --full-out-f32 writes the same as raw little-endian float32 [positions, n_vocab].
// --flash-attention picks llama.cpp's attention kernel (default auto: on for CPU) and
// --kv-type its KV cache element type for keys and values (default F16), so tests can
// measure which llama.cpp setting a difference comes from.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../../.refs/package.json"));
const { getLlama, LlamaLogLevel } = await import(require.resolve("node-llama-cpp"));

function parseArgs(argv) {
  const args = { topK: 10, threads: 2, flashAttention: "auto" };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (k === "--model") args.model = v;
    else if (k === "--tokens") args.tokens = v.split(",").filter((s) => s !== "").map(Number);
    else if (k === "--text") args.text = v;
    else if (k === "--top-k") args.topK = Number(v);
    else if (k === "--full-out") args.fullOut = v;
    else if (k === "--full-out-f32") args.fullOutF32 = v;
    else if (k === "--flash-attention") args.flashAttention = { auto: "auto", on: true, off: false }[v];
    else if (k === "--kv-type") args.kvType = v;
    else if (k === "--threads") args.threads = Number(v);
    else if (k === "--generate") args.generate = Number(v);
    else if (k === "--generate-argmax") { args.generateArgmax = true; --i; }
    else throw new Error(`unknown argument ${k}`);
  }
  if (args.flashAttention === undefined) throw new Error("--flash-attention takes auto, on or off");
  if (!args.model || (!args.tokens && args.text === undefined)) {
    throw new Error("usage: llama_cpp_eval.mjs --model M.gguf (--tokens 1,2,3 | --text T) [--top-k K] [--full-out F]");
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));
const llama = await getLlama({
  gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true,
  progressLogs: false, logLevel: LlamaLogLevel.error,
});
const model = await llama.loadModel({ modelPath: args.model, gpuLayers: 0 });
const out = {};
let tokens = args.tokens;
if (args.text !== undefined) {
  out.text_tokens = Array.from(model.tokenize(args.text, true));
  if (!tokens) tokens = out.text_tokens;
}
const context = await model.createContext({
  contextSize: Math.max(64, tokens.length + (args.generate ?? 0) + 8), threads: args.threads,
  flashAttention: args.flashAttention,
  ...(args.kvType ? { experimentalKvCacheKeyType: args.kvType, experimentalKvCacheValueType: args.kvType } : {}),
});
out.flash_attention = context.flashAttention;
const sequence = context.getSequence();
const input = tokens.map((t) => [t, { generateNext: { probabilities: true } }]);
const results = await sequence.controlledEvaluate(input);

out.tokens = tokens;
out.positions = [];
const full = [];
const fullF32 = args.fullOutF32 ? [] : null;
for (let pos = 0; pos < tokens.length; ++pos) {
  const probs = results[pos]?.next?.probabilities;
  if (!probs) throw new Error(`no probabilities at position ${pos}`);
  out.n_vocab = probs.size;
  const top = [];
  for (const [id, p] of probs) {  // sorted by probability, highest first
    if (top.length >= args.topK) break;
    top.push([id, Math.log(p)]);
  }
  out.positions.push({ pos, argmax: top[0][0], top });
  if (args.fullOut) {
    const lp = new Array(probs.size).fill(null);
    for (const [id, p] of probs) lp[id] = p > 0 ? Math.log(p) : null;
    full.push(lp);
  }
  if (fullF32) {
    const lp = new Float32Array(probs.size).fill(-Infinity);
    for (const [id, p] of probs) lp[id] = Math.log(p);
    fullF32.push(lp);
  }
}
if (args.generate && args.generateArgmax) {
  out.generated = [];
  let next = out.positions[out.positions.length - 1].argmax;
  for (let i = 0; i < args.generate; ++i) {
    out.generated.push(next);
    if (i + 1 === args.generate) break;
    const [res] = await sequence.controlledEvaluate([[next, { generateNext: { token: true, options: { temperature: 0 } } }]]);
    next = res.next.token;
  }
} else if (args.generate) {
  out.generated = [];
  out.generated_top = [out.positions[out.positions.length - 1].top.slice(0, 2)];
  let next = out.positions[out.positions.length - 1].argmax;
  for (let i = 0; i < args.generate; ++i) {
    out.generated.push(next);
    if (i + 1 === args.generate) break;
    const [res] = await sequence.controlledEvaluate([[next, { generateNext: { probabilities: true } }]]);
    const top = [];
    for (const [id, p] of res.next.probabilities) {
      if (top.length >= 2) break;
      top.push([id, Math.log(p)]);
    }
    out.generated_top.push(top);
    next = top[0][0];
  }
}
if (args.fullOut) fs.writeFileSync(args.fullOut, JSON.stringify(full));
if (fullF32) fs.writeFileSync(args.fullOutF32, Buffer.concat(fullF32.map((a) => Buffer.from(a.buffer))));
console.log(JSON.stringify(out));
await context.dispose();
await model.dispose();
await llama.dispose();
