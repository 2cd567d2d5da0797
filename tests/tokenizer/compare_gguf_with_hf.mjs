// The tokenizer pagellm rebuilds from a GGUF's metadata (tokenizer.ggml.tokens / merges /
// token_type / pre, written by `pagellm convert`) must give the same ids as Hugging Face
// tokenizers (native Rust @anush008/tokenizers) on the checkpoint's tokenizer.json, for the
// whole generated corpus, and decode HF's ids to HF's text. Exits 1 on any mismatch.
// With --skip-special-tokens the GGUF's token types decide what is special: llama.cpp's
// converter (and `pagellm convert`, which follows it) marks added tokens that look special
// (<|fim_prefix|>, <|repo_name|>, ...) CONTROL although tokenizer.json says special=false,
// so the expected text is HF's decode without the GGUF's CONTROL tokens (read from the
// file by @huggingface/gguf, an independent reader).
//
//   node tests/tokenizer/compare_gguf_with_hf.mjs build/pagellm WORKDIR [--lines N] [--seed S]
//
// WORKDIR receives a qwen3-tiny dummy checkpoint (the real Qwen3 tokenizer) and its F16
// GGUF. llama.cpp's own tokenizer (node-llama-cpp) on the same GGUF is reported for
// information only: it is a third implementation, not the reference.
import fs from 'fs';
import path from 'path';
import { spawnSync } from 'child_process';
import { createRequire } from 'module';
import { hfNative, kRefs } from './hf.mjs';
import { generateCorpus } from './gen_corpus.mjs';

const args = process.argv.slice(2);
const [pagellm, workdir] = args;
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const numLines = Number(opt('--lines', 3000));
const seed = Number(opt('--seed', 1));
if (!pagellm || !workdir) {
  console.error('usage: compare_gguf_with_hf.mjs PAGELLM WORKDIR [--lines N] [--seed S]');
  process.exit(2);
}

function run(cmd, cmdArgs, input) {
  const r = spawnSync(cmd, cmdArgs, { input, maxBuffer: 1 << 30, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${cmdArgs.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

function pagellmJsonl(cmd, model, inputLines, extra = []) {
  const out = run(pagellm, [cmd, '--model', model, '--jsonl', ...extra], inputLines.join('\n') + '\n');
  return out.trimEnd().split('\n').map((l) => JSON.parse(l));
}

const show = (s) => JSON.stringify(s.length > 160 ? s.slice(0, 160) + '…' : s);
const sameIds = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

fs.mkdirSync(workdir, { recursive: true });
const modelDir = path.join(workdir, 'qwen3-tiny');
const gguf = path.join(workdir, 'qwen3-tiny-f16.gguf');
if (!fs.existsSync(path.join(modelDir, 'config.json'))) {
  run(pagellm, ['make-dummy-model', '--preset', 'qwen3-tiny', '--out', modelDir, '--seed', '11']);
}
run(pagellm, ['convert', modelDir, '--outfile', gguf, '--outtype', 'f16']);

const lines = generateCorpus(seed, numLines);
const hf = hfNative.Tokenizer.fromFile(path.join(modelDir, 'tokenizer.json'));
const ref = [];
for (const text of lines) ref.push((await hf.encode(text, null, { addSpecialTokens: false })).getIds());

const ours = pagellmJsonl('tokenize', gguf, lines.map((text) => JSON.stringify({ text })));
const idDiffs = [];
lines.forEach((text, i) => { if (!sameIds(ours[i].ids, ref[i])) idDiffs.push(i); });
for (const i of idDiffs.slice(0, 5)) {
  console.log(`  line ${i}: ${show(lines[i])}\n    gguf ${JSON.stringify(ours[i].ids.slice(0, 40))}\n    hf   ${JSON.stringify(ref[i].slice(0, 40))}`);
}
const require = createRequire(kRefs + '/');
const { gguf: readGguf } = await import(require.resolve('@huggingface/gguf'));
const { metadata } = await readGguf(path.resolve(gguf), { allowLocalFile: true });
const kControl = 3;
const control = new Set();
metadata['tokenizer.ggml.token_type'].forEach((t, id) => { if (Number(t) === kControl) control.add(id); });
let decodeDiffs = 0;
const idLines = ref.map((ids) => JSON.stringify({ ids }));
for (const skip of [false, true]) {
  const texts = pagellmJsonl('detokenize', gguf, idLines, skip ? ['--skip-special-tokens'] : []);
  for (let i = 0; i < ref.length; i++) {
    const want = await hf.decode(skip ? ref[i].filter((id) => !control.has(id)) : ref[i], skip);
    if (texts[i].text !== want && decodeDiffs++ < 3) {
      console.log(`  decode mismatch (skip=${skip}) line ${i}: gguf ${show(texts[i].text)} hf ${show(want)}`);
    }
  }
}
const tokens = ref.reduce((n, ids) => n + ids.length, 0);
console.log(`gguf tokenizer: ${lines.length} lines (${tokens} tokens), ${idDiffs.length} id mismatches, ` +
            `${decodeDiffs} decode mismatches vs HF tokenizers on tokenizer.json`);

// Information only: llama.cpp's tokenizer on the same GGUF, parsing special tokens in the
// text as HF does with its added tokens.
try {
  const { getLlama, LlamaLogLevel } = await import(require.resolve('node-llama-cpp'));
  const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true,
                                 progressLogs: false, logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: gguf, gpuLayers: 0, vocabOnly: true });
  let disagree = 0;
  lines.forEach((text, i) => { if (!sameIds(Array.from(model.tokenize(text, true)), ref[i])) disagree++; });
  console.log(`info: llama.cpp's tokenizer on the GGUF disagrees with HF on ${disagree}/${lines.length} lines`);
  await model.dispose();
  await llama.dispose();
} catch (e) {
  console.log(`info: llama.cpp tokenizer not usable: ${e.message}`);
}
const ok = idDiffs.length === 0 && decodeDiffs === 0;
console.log(ok ? 'PASS' : 'FAIL');
process.exit(ok ? 0 : 1);
