// Deterministic tokenizer test corpus: one text per line, covering Unicode categories,
// scripts, emoji sequences, combining marks, code, numbers, whitespace and special-token
// look-alikes, plus random code points (astral included) and very long words.
//
//   import { generateCorpus } from './gen_corpus.mjs';  const lines = generateCorpus(seed, n);
//   node tests/tokenizer/gen_corpus.mjs [seed] [n] > corpus.jsonl   ({"text": ...} per line)

// xorshift32: small, seedable, identical on every machine.
export function makeRng(seed) {
  let s = (seed >>> 0) || 1;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (arr) => arr[Math.floor(next() * arr.length)],
  };
}

const kCategories = ['Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'Mn', 'Mc', 'Me', 'Nd', 'Nl', 'No', 'Pc', 'Pd', 'Ps',
  'Pe', 'Pi', 'Pf', 'Po', 'Sm', 'Sc', 'Sk', 'So', 'Zs', 'Zl', 'Zp', 'Cc', 'Cf', 'Co', 'Cn'];

// Code points per general category according to this Node's Unicode (newer than HF's).
let pools = null;
function categoryPools() {
  if (pools) return pools;
  pools = {};
  const res = kCategories.map((c) => [c, new RegExp(`^\\p{gc=${c}}$`, 'u')]);
  for (const [c] of res) pools[c] = [];
  for (let cp = 0; cp < 0x110000; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const ch = String.fromCodePoint(cp);
    for (const [c, re] of res) if (re.test(ch)) { if (c !== 'Cn' && c !== 'Co' || (cp & 0xff) === 0x3f) pools[c].push(cp); break; }
  }
  return pools;
}

const kSamples = {
  latin: ['café', 'naïve', 'Ångström', 'Øresund', 'Łódź', 'Straße', 'ſtraße', 'façade', 'Ærø', 'Ĳssel', 'ǅemal', 'Việt Nam', 'Şırnak', 'Dvořák', 'cafe\u0301', 'A\u030A', 'n\u0303o', 'e\u0301\u0301', 'ﬁnance', 'Ⅻ', 'ｆｕｌｌｗｉｄｔｈ'],
  cyrillic: ['Привет, мир!', 'Ёжик в тумане', 'ЩИ да каша', 'й и\u0306', 'Україна ґ', 'Српски Ђ'],
  greek: ['Καλημέρα κόσμε', 'ΣΊΣΥΦΟΣ ς', 'ά α\u0301', 'ὅτι ᾧ', 'Ωμέγα'],
  arabic: ['مرحبا بالعالم', 'العَرَبِيَّة', '٠١٢٣٤٥٦٧٨٩', 'ﻻ ﷺ', 'سلام‌عليكم'],
  hebrew: ['שָׁלוֹם עוֹלָם', 'עברית', 'ﬠ וּ'],
  devanagari: ['नमस्ते दुनिया', 'क़ क़', 'हिन्दी ॐ', '१२३४'],
  thai: ['สวัสดีชาวโลก', 'ภาษาไทย ๑๒๓', 'กำ'],
  cjk: ['你好，世界！', '中文分词测试。', '漢字かな交じり文', 'カタカナ ｶﾀｶﾅ', 'ガ か\u3099', '𠀋𠂢𪚥', '〇一二三', '「引用」『二重』'],
  hangul: ['안녕하세요 세계', '한국어', '\u1100\u1161\u11A8', '각 ㄱㅏ', 'ᄀᆞ'],
  other_scripts: ['ሰላም', 'გამარჯობა', 'Բարեւ', 'ᏣᎳᎩ', 'ᚠᛇᚻ', 'ꦗꦮ', 'ᠮᠣᠩᠭᠣᠯ\u180E', '𓀀𓂀', '𐌰𐌱', 'ܫܠܡܐ', 'ދިވެހި', 'తెలుగు', 'ಕನ್ನಡ', 'മലയാളം', 'සිංහල', 'བོད་ཡིག', 'ລາວ', 'ខ្មែរ', 'မြန်မာ'],
  emoji: ['😀', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇯🇵🇺🇸🇩🇪', '1️⃣', '❤️', '🧑🏿‍💻', '🫠', '🏴󠁧󠁢󠁳󠁣󠁴󠁿', '👩🏻‍❤️‍💋‍👨🏼', '☺︎', '✈️', '🤗🤗🤗'],
  code: [
    'def f(x):\n    return x**2  # square\n',
    'for (int i = 0; i < n; ++i) { sum += a[i]; }',
    'const x = await fetch(`/api/${id}`).then(r => r.json());',
    'fn main() { println!("{:?}", vec![1, 2, 3]); }',
    'SELECT * FROM users WHERE name LIKE \'%o\'\'k%\';',
    '<div class="a">&nbsp;<br/></div>',
    '{"key": [1, 2.5e-3, null, true], "k2": "v\\n"}',
    '#include <stdio.h>\nint main(){printf("%d\\n",42);}',
    '    if x:\n\t\tpass\r\n',
    '$ ls -la | grep "\\.cc$" && echo $?',
    'x+=1;y-=2;z*=3;w/=4;a%=5;b**=6;c//=7;d<<=8;e>>=9',
    '@decorator\nclass A(B, metaclass=M): ...',
  ],
  numbers: ['0', '42', '3.14159', '1,000,000', '1e-10', '12345678901234567890', '-0.5', '0x1F', '2024-01-31', '10:30:00', '১২৩', '١٢٣', '１２３', '²³', '½', 'Ⅳ', '㉑', '𝟘𝟙𝟚'],
  whitespace: [' ', '  ', '\t', '\n', '\r\n', '\r', '\n\n\n', ' \n ', '\t \t', '\u00A0', '\u3000', '\u2028', '\u2029', '\u0085', '\u000B', '\u000C', '\u200B', '\u180E', '\u2009', '   \n', '\r\n\r\n', ' \r\n'],
  special: ['<|im_start|>', '<|im_end|>', '<|endoftext|>', '<|im_start', 'im_end|>', '<|im_end|>x', '< |im_end|>', '<|IM_END|>', '<<|im_start|>>', '<|im_start|><|im_end|>', '<think>', '</think>', '<tool_call>', '<|fim_prefix|>', '<|vision_pad|>', '<|endoftext|', '<|im_sep|>', ' <|im_start|> ', '\n<|im_end|>\n'],
  contractions: ["don't", "I'M", "he'S", "we'Ve", "it'll", "'s", "'ſ", "'LL", "you'd", "O'Neil", "'re'm", "''s", "rock'n'roll"],
  punctuation: ['...', '!!!', '?!', '—', '–', '“quoted”', '«guillemets»', '„low“', '¿qué?', '¡hola!', '•', '§', '¶', '†‡', '©®™', '€£¥₹₿', '∑∫√∞≠≤≥', '→⇒↔', '░▒▓', '♠♣♥♦', '@#$%^&*()', '~`|\\'],
};

function randomScalar(rng) {
  for (;;) {
    const r = rng.next();
    let cp;
    if (r < 0.5) cp = rng.int(0x30000);
    else if (r < 0.6) cp = 0xe0000 + rng.int(0x200);
    else cp = rng.int(0x110000);
    if (cp < 0xd800 || cp > 0xdfff) return String.fromCodePoint(cp);
  }
}

function fromCategory(rng) {
  const p = categoryPools();
  const cat = rng.pick(kCategories);
  const pool = p[cat];
  return pool.length ? String.fromCodePoint(rng.pick(pool)) : '';
}

function longWord(rng) {
  const kinds = [() => 'a', () => rng.pick(['x', 'y', 'z', 'é', '字', 'ж']), () => String(rng.int(10)),
    () => ' ', () => '\n', () => rng.pick(['!', '-', '=', '.', '*']), () => fromCategory(rng), () => '\u0301'];
  const gen = rng.pick(kinds);
  const n = 50 + rng.int(rng.next() < 0.2 ? 3000 : 400);
  let s = '';
  for (let i = 0; i < n; i++) s += gen();
  return s;
}

function fragment(rng) {
  const r = rng.next();
  if (r < 0.55) return rng.pick(kSamples[rng.pick(Object.keys(kSamples))]);
  if (r < 0.7) return fromCategory(rng);
  if (r < 0.8) return randomScalar(rng);
  if (r < 0.9) return rng.pick(['a', 'b', 'the', 'The', ' ', 'x', 'Hello', 'world', '1', '2', '\'']);
  if (r < 0.97) return String.fromCodePoint(rng.pick([0x300, 0x301, 0x308, 0x327, 0x334, 0x5b4, 0x93c, 0x302, 0x20dd, 0xfe0f, 0x200d, 0x1f3fb]));
  return longWord(rng);
}

export function generateCorpus(seed = 1, numLines = 3000) {
  const rng = makeRng(seed);
  const lines = [];
  // Every sample on its own, alone and in a sentence.
  for (const list of Object.values(kSamples)) {
    for (const s of list) { lines.push(s); lines.push(`Text ${s} end`); lines.push(` ${s}${s} `); }
  }
  // Every category next to letters, digits, spaces and marks.
  const p = categoryPools();
  for (const cat of kCategories) {
    for (let k = 0; k < 12 && p[cat].length; k++) {
      const c = String.fromCodePoint(rng.pick(p[cat]));
      lines.push(`a${c}b 1${c}2 ${c} ${c}${c}x \n${c}\n '${c}s ${c}\u0301`);
    }
  }
  while (lines.length < numLines) {
    const n = 1 + rng.int(rng.next() < 0.1 ? 60 : 12);
    let s = '';
    for (let i = 0; i < n; i++) s += fragment(rng) + (rng.next() < 0.3 ? rng.pick(kSamples.whitespace) : '');
    lines.push(s);
  }
  return lines;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const lines = generateCorpus(Number(process.argv[2] || 1), Number(process.argv[3] || 3000));
  process.stdout.write(lines.map((text) => JSON.stringify({ text })).join('\n') + '\n');
}
