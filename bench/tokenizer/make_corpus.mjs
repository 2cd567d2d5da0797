// Builds the benchmark corpus (~4 MB of lines): English prose and C++ from this
// repository and the system's license texts, plus the multilingual test corpus.
//
//   node bench/tokenizer/make_corpus.mjs OUT.txt [target_mb]
import fs from 'fs';
import path from 'path';
import { generateCorpus } from '../../tests/tokenizer/gen_corpus.mjs';

const out = process.argv[2];
const targetBytes = Number(process.argv[3] || 4) * 1e6;
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const files = [];
const walk = (dir, exts) => {
  if (!fs.existsSync(dir)) return;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, exts);
    else if (exts.some((x) => e.name.endsWith(x))) files.push(p);
  }
};
walk(path.join(root, 'src'), ['.h', '.cc']);
walk('/work/shared/docs', ['.md']);
walk('/usr/share/common-licenses', ['']);
let lines = [];
for (const f of files.sort()) lines.push(...fs.readFileSync(f, 'utf8').split('\n'));
const natural = lines.filter((l) => l.length > 0);
const multilingual = generateCorpus(7, 6000).filter((l) => !l.includes('\n') && !l.includes('\r') && !/[\u2028\u2029\u0085]/.test(l));
const result = [];
let bytes = 0;
for (let i = 0; bytes < targetBytes; i++) {
  const l = i % 4 === 3 ? multilingual[(i >> 2) % multilingual.length] : natural[i % natural.length];
  result.push(l);
  bytes += Buffer.byteLength(l) + 1;
}
fs.writeFileSync(out, result.join('\n') + '\n');
console.log(`wrote ${out}: ${(bytes / 1e6).toFixed(2)} MB, ${result.length} lines`);
