#!/usr/bin/env node
// llama.cpp's negative log-likelihood of token windows (node-llama-cpp's prebuilt CPU
// library; nothing is built or downloaded): the reference for the small model's perplexity.
//
//   node tools/small_model/llama_cpp_nll.mjs --model M.gguf --windows windows.json [--threads 2]
//
// windows.json: [[id, id, ...], ...]. Each window is evaluated from an empty KV cache; prints
// {"windows": [[nll of token 1 given 0, nll of token 2 given 0..1, ...], ...]} in nats.
// node-llama-cpp exposes the softmax over the full vocabulary of the raw logits when the
// sampler runs at temperature 0, so -log p(target) is exact up to float rounding.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../../.refs/package.json"));
const { getLlama, LlamaLogLevel } = await import(require.resolve("node-llama-cpp"));

const argv = process.argv.slice(2);
const arg = (name, def) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : def; };
const modelPath = arg("--model");
const windows = JSON.parse(fs.readFileSync(arg("--windows"), "utf8"));
const llama = await getLlama({
  gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true,
  progressLogs: false, logLevel: LlamaLogLevel.error,
});
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const longest = Math.max(...windows.map((w) => w.length));
const context = await model.createContext({ contextSize: Math.max(64, longest + 8), threads: Number(arg("--threads", 2)) });
const out = [];
const sequence = context.getSequence();
for (const tokens of windows) {
  await sequence.clearHistory();
  const input = tokens.map((t) => [t, { generateNext: { probabilities: true } }]);
  const results = await sequence.controlledEvaluate(input);
  const nll = [];
  for (let pos = 0; pos + 1 < tokens.length; ++pos) {
    const p = results[pos].next.probabilities.get(tokens[pos + 1]) ?? 0;
    nll.push(p > 0 ? -Math.log(p) : null);
  }
  out.push(nll);
}
console.log(JSON.stringify({ windows: out }));
await context.dispose();
await model.dispose();
await llama.dispose();
