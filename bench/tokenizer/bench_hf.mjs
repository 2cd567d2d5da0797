// HF tokenizers throughput on the same corpus: native Rust (@anush008/tokenizers),
// per-line encode and one encodeBatch call; prints MB/s and tokens/s. Run with
// RAYON_NUM_THREADS=1 for a single-threaded batch.
//
//   node bench/tokenizer/bench_hf.mjs CORPUS.txt [repeats]
import fs from 'fs';
import { hfNative, kQwen3Json } from '../../tests/tokenizer/hf.mjs';

const file = process.argv[2];
const repeats = Number(process.argv[3] || 3);
const text = fs.readFileSync(file, 'utf8');
const mb = Buffer.byteLength(text) / 1e6;
const lines = text.split('\n');
if (lines.at(-1) === '') lines.pop();
const tok = hfNative.Tokenizer.fromFile(kQwen3Json);
const opts = { addSpecialTokens: false };

async function perLine() {
  let n = 0;
  for (const l of lines) n += (await tok.encode(l, null, opts)).getLength();
  return n;
}
async function batch() {
  let n = 0;
  for (let i = 0; i < lines.length; i += 4096) {
    for (const e of await tok.encodeBatch(lines.slice(i, i + 4096), opts)) n += e.getLength();
  }
  return n;
}
for (const [name, fn] of [['per-line', perLine], ['batch', batch]]) {
  let tokens = await fn();  // warm-up
  let best = Infinity;
  for (let r = 0; r < repeats; r++) {
    const t0 = process.hrtime.bigint();
    tokens = await fn();
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  console.log(`hf-native ${name.padEnd(8)} ${mb.toFixed(2)} MB  ${lines.length} lines  ${tokens} tokens  best ${best.toFixed(3)} s  ${(mb / best).toFixed(2)} MB/s  ${(tokens / best).toFixed(0)} tokens/s`);
}
