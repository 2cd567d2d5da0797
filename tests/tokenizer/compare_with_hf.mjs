// Runs a generated corpus through `pagellm tokenize --jsonl` / `detokenize --jsonl` and
// through Hugging Face tokenizers (native Rust @anush008/tokenizers is the reference;
// the pure-JS @huggingface/tokenizers is compared for information), and exits 1 on the
// first mismatching ids or decoded text, printing the first few differences.
//
//   node tests/tokenizer/compare_with_hf.mjs build/pagellm [--lines N] [--variant-lines M] [--seed S]
//
// Besides Qwen3's tokenizer.json it checks variants written to a temp dir: the Qwen3.5
// pre-tokenizer pattern (\p{M} in letter runs), added-token flags (lstrip, rstrip,
// single_word, normalized), GPT-2 ByteLevel(use_regex, add_prefix_space), ignore_merges.
import fs from 'fs';
import os from 'os';
import path from 'path';
import { spawnSync } from 'child_process';
import { hfNative, kQwen3Json, kQwen3ConfigJson, loadHfJs } from './hf.mjs';
import { generateCorpus } from './gen_corpus.mjs';

const args = process.argv.slice(2);
const pagellm = args[0];
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const numLines = Number(opt('--lines', 3000));
const variantLines = Number(opt('--variant-lines', numLines));
const seed = Number(opt('--seed', 1));
if (!pagellm) { console.error('usage: compare_with_hf.mjs PAGELLM [--lines N] [--seed S]'); process.exit(2); }

const kQwen35Pattern = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

function variants(base) {
  const clone = () => JSON.parse(JSON.stringify(base));
  const out = [['qwen3', base]];
  const q35 = clone();
  q35.pre_tokenizer.pretokenizers[0].pattern.Regex = kQwen35Pattern;
  out.push(['qwen3.5-pattern', q35]);
  const flags = clone();
  const byContent = (c) => flags.added_tokens.find((t) => t.content === c);
  Object.assign(byContent('<|im_start|>'), { lstrip: true });
  Object.assign(byContent('<|im_end|>'), { rstrip: true });
  Object.assign(byContent('<think>'), { single_word: true });
  Object.assign(byContent('</think>'), { normalized: true, lstrip: true, rstrip: true });
  Object.assign(byContent('<tool_call>'), { single_word: true, lstrip: true });
  flags.added_tokens.push({ id: 151669, content: 'e\u0301t\u00e9', single_word: false, lstrip: false, rstrip: false, normalized: true, special: false });
  flags.added_tokens.push({ id: 151670, content: ' world', single_word: true, lstrip: false, rstrip: false, normalized: false, special: true });
  out.push(['added-token-flags', flags]);
  const gpt2 = clone();
  gpt2.pre_tokenizer = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true };
  gpt2.normalizer = null;
  out.push(['gpt2-bytelevel-prefix-space', gpt2]);
  const ignore = clone();
  ignore.model.ignore_merges = true;
  out.push(['ignore-merges', ignore]);
  return out;
}

function runPagellm(cmd, jsonPath, inputLines, extra = []) {
  const r = spawnSync(pagellm, [cmd, '--model', jsonPath, '--jsonl', ...extra], {
    input: inputLines.join('\n') + '\n', maxBuffer: 1 << 30, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`pagellm ${cmd} failed (${r.status}): ${r.stderr}`);
  return r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l));
}

const show = (s) => JSON.stringify(s.length > 160 ? s.slice(0, 160) + '…' : s);
const sameIds = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

async function checkVariant(name, json, lines, tmp, checkDecode) {
  const file = path.join(tmp, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(json));
  const hf = hfNative.Tokenizer.fromFile(file);
  const t0 = Date.now();
  const ours = runPagellm('tokenize', file, lines.map((text) => JSON.stringify({ text })));
  const ref = [];
  for (const text of lines) ref.push((await hf.encode(text, null, { addSpecialTokens: false })).getIds());
  const diffs = [];
  lines.forEach((text, i) => { if (!sameIds(ours[i].ids, ref[i])) diffs.push(i); });
  // Decode HF's ids (with and without special tokens) and compare with HF's decode.
  const idLines = ref.map((ids) => JSON.stringify({ ids }));
  let decodeDiffs = 0;
  for (const skip of checkDecode ? [false, true] : []) {
    const texts = runPagellm('detokenize', file, idLines, skip ? ['--skip-special-tokens'] : []);
    for (let i = 0; i < ref.length; i++) {
      const want = await hf.decode(ref[i], skip);
      if (texts[i].text !== want) {
        if (decodeDiffs++ < 3) console.log(`  decode mismatch (skip=${skip}) line ${i}: ours ${show(texts[i].text)} hf ${show(want)}`);
      }
    }
  }
  console.log(`${name}: ${lines.length} lines, ${diffs.length} id mismatches, ${decodeDiffs} decode mismatches (${Date.now() - t0} ms)`);
  for (const i of diffs.slice(0, 5)) {
    console.log(`  line ${i}: ${show(lines[i])}\n    ours ${JSON.stringify(ours[i].ids.slice(0, 40))}\n    hf   ${JSON.stringify(ref[i].slice(0, 40))}`);
  }
  return { ok: diffs.length === 0 && decodeDiffs === 0, ref };
}

async function compareHfJs(lines, ref) {
  try {
    const { Tokenizer } = await loadHfJs();
    const tok = new Tokenizer(JSON.parse(fs.readFileSync(kQwen3Json, 'utf8')), JSON.parse(fs.readFileSync(kQwen3ConfigJson, 'utf8')));
    let disagree = 0;
    lines.forEach((text, i) => { if (!sameIds(tok.encode(text, { add_special_tokens: false }).ids, ref[i])) disagree++; });
    console.log(`info: @huggingface/tokenizers (JS) disagrees with the Rust reference on ${disagree}/${lines.length} lines`);
  } catch (e) {
    console.log(`info: @huggingface/tokenizers not usable: ${e.message}`);
  }
}

const lines = generateCorpus(seed, numLines);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pagellm-tok-'));
let ok = true;
const base = JSON.parse(fs.readFileSync(kQwen3Json, 'utf8'));
for (const [name, json] of variants(base)) {
  const main = name === 'qwen3';
  const r = await checkVariant(name, json, main ? lines : lines.slice(0, variantLines), tmp,
                               main || name === 'added-token-flags');
  ok = ok && r.ok;
  if (name === 'qwen3') await compareHfJs(lines, r.ref);
}
fs.rmSync(tmp, { recursive: true, force: true });
console.log(ok ? 'PASS' : 'FAIL');
process.exit(ok ? 0 : 1);
