// constrained_decode_bench: decode speed of a JSON-schema request next to a free one in
// the same batch, against a free request next to another free one (issue 18: >= 0.9x).
// Tokens/s over the window in which both requests of a pair decode; medians of ROUNDS.
//
//   pagellm serve MODEL --served-model-name m --port 18777 &
//   node bench/grammar/constrained_decode_bench.mjs http://127.0.0.1:18777 [ROUNDS]
import { pathToFileURL } from "node:url";
const { default: OpenAI } = await import(pathToFileURL(new URL("../../.refs/node_modules/openai/index.mjs", import.meta.url).pathname).href);
const [url, rounds] = [process.argv[2], Number(process.argv[3] ?? 5)];
const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "none", maxRetries: 0, timeout: 600000 });
const schema = { type: "object", properties: { items: { type: "array", items: { type: "object", properties: {
  name: { type: "string", maxLength: 40 }, size: { type: "integer" }, tags: { type: "array", items: { type: "string", maxLength: 16 } } },
  required: ["name", "size", "tags"] }, minItems: 30 } }, required: ["items"] };
async function run(extra) {
  const t = [];
  const stream = await client.completions.create({ model: "m", prompt: "List the files as JSON:\n", max_tokens: 160, temperature: 0.7, seed: 1,
    stream: true, ...extra });
  for await (const c of stream) if (c.choices[0]?.text) t.push(performance.now());
  return t;
}
const ratios = [];
for (let i = 0; i < rounds; i++) {
  // The same free request next to a constrained one, and next to a free one: the step
  // rate (tokens/s of every request in the batch) with and without a grammar in it.
  const [f, h] = await Promise.all([run({ ignore_eos: true }), run({ response_format: { type: "json_schema", json_schema: { name: "s", schema } } })]);
  const [f2] = await Promise.all([run({ ignore_eos: true }), run({ ignore_eos: true, seed: 2 })]);
  // Both over the window in which both were decoding.
  const end = Math.min(f[f.length - 1], h[h.length - 1]);
  const rate = (t) => { const w = t.filter((x) => x <= end); return (w.length - 1) / ((w[w.length - 1] - w[0]) / 1000); };
  const free = { n: f2.length, tps: (f2.length - 1) / ((f2[f2.length - 1] - f2[0]) / 1000) }, held = { n: h.length, tps: rate(h) };
  ratios.push(held.tps / free.tps);
  console.log(`free ${free.n} chunks ${free.tps.toFixed(1)}/s, constrained ${held.n} chunks ${held.tps.toFixed(1)}/s, ratio ${(held.tps / free.tps).toFixed(3)}`);
}
ratios.sort();
console.log(`median ratio ${ratios[Math.floor(ratios.length / 2)].toFixed(3)}`);
