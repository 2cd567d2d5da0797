// End-to-end structured outputs through the official `openai` SDK on a random-weight
// dummy model (Qwen3 tokenizer, 151,936 rows). A random model writes whatever the mask
// lets through, so every finished output is a test of the mask: each must validate with
// ajv + ajv-formats (schema_validator.mjs), an independent judge. Schemas the engine
// cannot honour must be a 400 naming the keyword. Outputs cut by max_tokens are counted
// apart (an unfinished JSON text is not an answer) and must stay under 10 %.
//
//   node tests/e2e/structured_outputs_test.mjs build/pagellm [case-filter]
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { importRef, makeTinyModel, runCases, sourceDir, startServer } from "./harness.mjs";
import { schemaValidator } from "./schema_validator.mjs";

const [pagellm, filter] = process.argv.slice(2);
if (!pagellm) {
  console.error("usage: structured_outputs_test.mjs PAGELLM_BINARY [case-filter]");
  process.exit(2);
}
const { default: OpenAI } = await importRef("openai/index.mjs");
const model = makeTinyModel(pagellm);
const server = await startServer(pagellm, model);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "none", maxRetries: 0, timeout: 300000 });
const user = [{ role: "user", content: "Reply in JSON." }];
const schemaOf = (schema) => ({ type: "json_schema", json_schema: { name: "s", schema, strict: true } });

// A random model almost never ends a string: its logits are peaked (std 8, a few tokens
// far above the rest) and only a few hundred of the 151,936 tokens close one, so its
// strings run to max_tokens. The maximal bias on `"` stands in for a model that wants to
// finish; the mask alone still decides what is allowed (it is applied first, so `"`
// outside the grammar stays at -inf), and strings still get content where minLength,
// a pattern or a format asks for it, or where a token's logit tops the bias.
async function quoteBias() {
  const r = await fetch(`${server.url}/tokenize`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: '"' }) });
  const { tokens } = await r.json();
  assert.equal(tokens.length, 1);
  return { [tokens[0]]: 100 };
}
const kQuoteBias = await quoteBias();

// Hand-written real-world shapes: nested objects, arrays of objects, enums, refs,
// patterns, unions, formats, recursion, tuples.
const kSuite = [
  { type: "object", properties: { name: { type: "string", maxLength: 20 }, age: { type: "integer", minimum: 0, maximum: 120 } }, required: ["name", "age"], additionalProperties: false },
  { type: "array", items: { type: "object", properties: { id: { type: "integer" }, tags: { type: "array", items: { enum: ["a", "b", "c"] }, maxItems: 3 } }, required: ["id"] }, maxItems: 3 },
  { $defs: { p: { type: "object", properties: { x: { type: "number", minimum: -1, maximum: 1 }, y: { type: "number" } }, required: ["x", "y"] } }, type: "object", properties: { from: { $ref: "#/$defs/p" }, to: { $ref: "#/$defs/p" } }, required: ["from", "to"] },
  { type: "object", properties: { when: { type: "string", format: "date-time" }, id: { type: "string", format: "uuid" }, mail: { type: "string", format: "email" } }, required: ["when", "id", "mail"] },
  { type: "object", properties: { code: { type: "string", pattern: "^[A-Z]{3}-[0-9]{2,4}$" } }, required: ["code"] },
  { anyOf: [{ type: "string", maxLength: 10 }, { type: "integer" }, { type: "null" }] },
  { oneOf: [{ type: "object", properties: { kind: { const: "circle" }, r: { type: "number", minimum: 0, maximum: 10 } }, required: ["kind", "r"] }, { type: "object", properties: { kind: { const: "square" }, side: { type: "integer", minimum: 1, maximum: 9 } }, required: ["kind", "side"] }] },
  { allOf: [{ type: "object", properties: { a: { type: "boolean" } }, required: ["a"] }, { properties: { b: { enum: [1, 2, 3] } }, required: ["b"] }] },
  { type: "object", additionalProperties: { type: "integer", minimum: 0, maximum: 9 } },
  { $defs: { node: { type: "object", properties: { v: { type: "integer", minimum: 0, maximum: 99 }, kids: { type: "array", items: { $ref: "#/$defs/node" }, maxItems: 2 } }, required: ["v"] } }, $ref: "#/$defs/node" },
  { type: "array", prefixItems: [{ type: "string", minLength: 1, maxLength: 5 }, { type: "boolean" }], items: false, minItems: 2 },
  { enum: ["red", "green", { rgb: [1, 2, 3] }, null] },
];
// JSONSchemaBench schemas (see data/SOURCES.md); CI runs every third one (2 shared cores),
// PAGELLM_CORPUS_EVERY=1 runs all 171.
const kEvery = Number(process.env.PAGELLM_CORPUS_EVERY ?? 3);
const kCorpus = JSON.parse(readFileSync(path.join(sourceDir, "tests/e2e/data/jsonschemabench_subset.json"), "utf8"))
  .filter((_, i) => i % kEvery === 0);
const kRefusal = /not supported|not provably|not allowed|no (integer|number|value)|matches nothing|does not resolve|local|too large|unknown|invalid/;

async function runSchema(name, schema, counts) {
  let r;
  try {
    r = await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 500, temperature: 1, seed: 1,
      logit_bias: kQuoteBias, response_format: schemaOf(schema) });
  } catch (e) {
    assert.equal(e.status, 400, `${name}: ${e.message}`);
    assert.equal(e.error?.type, "BadRequestError", name);
    assert.match(e.message, kRefusal, `${name}: ${e.message}`);
    counts.refused++;
    return;
  }
  counts.supported++;
  const c = r.choices[0];
  if (c.finish_reason === "length") {
    counts.truncated++;
    console.log(`TRUNCATED ${name}: ${c.message.content.slice(0, 160)}...`);
    return;
  }
  assert.equal(c.finish_reason, "stop", name);
  const value = JSON.parse(c.message.content);  // throws (fails the case) if not JSON
  const check = schemaValidator(schema);
  if (!check) { counts.unjudged++; return; }
  if (check(value)) counts.valid++;
  else { counts.invalid++; console.log(`INVALID ${name}: ${c.message.content}\n${JSON.stringify(check.errors)}`); }
}

async function runSuite(schemas) {
  const counts = { supported: 0, refused: 0, valid: 0, invalid: 0, truncated: 0, unjudged: 0 };
  for (const [name, schema] of schemas) await runSchema(name, schema, counts);
  console.log(`coverage: ${JSON.stringify(counts)}`);
  assert.equal(counts.invalid, 0);
  assert.ok(counts.truncated <= 0.1 * counts.supported, "too many outputs cut by max_tokens");
  return counts;
}

const noSpace = { type: "object", properties: { n: { type: "integer" }, flags: { type: "array", items: { type: "boolean" }, maxItems: 4 } }, required: ["n", "flags"] };

const cases = [
  ["hand-written schemas validate with ajv", async () => {
    const counts = await runSuite(kSuite.map((s, i) => [`suite-${i}`, s]));
    assert.equal(counts.refused, 0);
  }],
  ["JSONSchemaBench subset: refused with 400 or valid", async () => {
    const counts = await runSuite(kCorpus.map((d) => [d.name, d.schema]));
    assert.ok(counts.supported >= 0.7 * kCorpus.length, "most of the corpus should be supported");
  }],
  ["json_object, regex, choice, grammar, json on chat and completions, streaming", async () => {
    const obj = await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 300, seed: 2,
      logit_bias: kQuoteBias, structured_outputs: { json_object: true } });
    assert.equal(obj.choices[0].finish_reason, "stop");
    assert.equal(typeof JSON.parse(obj.choices[0].message.content), "object");
    const re = await client.completions.create({ model: "tiny", prompt: "id:", max_tokens: 20, structured_outputs: { regex: "[a-f]{3}-[0-9]{2}" } });
    assert.match(re.choices[0].text, /^[a-f]{3}-[0-9]{2}$/);
    assert.equal(re.choices[0].finish_reason, "stop");
    const ch = await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 20, guided_choice: ["yes", "no", "maybe"] });
    assert.ok(["yes", "no", "maybe"].includes(ch.choices[0].message.content), ch.choices[0].message.content);
    let text = "";
    for await (const chunk of await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 30, stream: true,
      guided_grammar: 'root ::= "<" [0-9]{2} ">"' })) text += chunk.choices[0]?.delta?.content ?? "";
    assert.match(text, /^<[0-9]{2}>$/);
    // The grammar finishes while its closing ">" is held back as the start of a stop string:
    // that text ends the output, streamed or not.
    const tag = { model: "tiny", prompt: "tag:", max_tokens: 30, stop: [">!"], guided_grammar: 'root ::= "<" [0-9]{2} ">"' };
    const held = await client.completions.create(tag);
    assert.match(held.choices[0].text, /^<[0-9]{2}>$/);
    assert.equal(held.choices[0].finish_reason, "stop");
    let streamed = "";
    for await (const chunk of await client.completions.create({ ...tag, stream: true })) streamed += chunk.choices[0]?.text ?? "";
    assert.equal(streamed, held.choices[0].text);
    let json = "";
    for await (const chunk of await client.completions.create({ model: "tiny", prompt: "JSON:", max_tokens: 300, stream: true,
      logit_bias: kQuoteBias, structured_outputs: { json: kSuite[6] } })) json += chunk.choices[0]?.text ?? "";
    assert.ok(schemaValidator(kSuite[6])(JSON.parse(json)), json);
    const alias = await client.completions.create({ model: "tiny", prompt: "x", max_tokens: 300, logit_bias: kQuoteBias,
      guided_json: JSON.stringify(kSuite[0]) });
    assert.ok(schemaValidator(kSuite[0])(JSON.parse(alias.choices[0].text)), alias.choices[0].text);
  }],
  ["whitespace: disable_any_whitespace and whitespace_pattern", async () => {
    for (let seed = 0; seed < 3; seed++) {
      const r = await client.completions.create({ model: "tiny", prompt: "x", max_tokens: 300, seed,
        structured_outputs: { json: noSpace, disable_any_whitespace: true } });
      assert.doesNotMatch(r.choices[0].text, /\s/);
      assert.ok(schemaValidator(noSpace)(JSON.parse(r.choices[0].text)));
      const p = await client.completions.create({ model: "tiny", prompt: "x", max_tokens: 300, seed,
        structured_outputs: { json: noSpace, whitespace_pattern: "[ ]{2}" } });
      for (const run of p.choices[0].text.match(/\s+/g) ?? []) assert.equal(run, "  ", p.choices[0].text);
      assert.ok(schemaValidator(noSpace)(JSON.parse(p.choices[0].text)));
    }
  }],
  ["n > 1, streaming n = 2, and a free request in the same batch", async () => {
    const [a, b, s] = await Promise.all([
      client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 20, n: 3, guided_regex: "(ab|cd){1,3}" }),
      client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 20, ignore_eos: true }),
      client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 300, n: 2, stream: true, response_format: schemaOf(noSpace) }),
    ]);
    assert.equal(a.choices.length, 3);
    for (const c of a.choices) assert.match(c.message.content, /^(ab|cd){1,3}$/);
    assert.equal(b.choices[0].finish_reason, "length");
    assert.equal(b.choices[0].message.content.length > 0, true);
    const texts = ["", ""];
    for await (const chunk of s) for (const c of chunk.choices) texts[c.index] += c.delta?.content ?? "";
    for (const t of texts) assert.ok(schemaValidator(noSpace)(JSON.parse(t)), t);
  }],
  ["structural_tag: free text, and each tagged part valid JSON between its begin and end", async () => {
    // A bias on the trigger "@" makes the random model open a part whenever the text is
    // free; the mask alone decides what follows (the rest of begin, the schema, end).
    const [at] = (await (await fetch(`${server.url}/tokenize`, { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "@" }) })).json()).tokens;
    const point = { type: "object", properties: { x: { type: "integer", minimum: 0, maximum: 9 }, y: { enum: ["a", "b"] } },
      required: ["x", "y"], additionalProperties: false };
    const tag = { type: "structural_tag", triggers: ["@"],
      structures: [{ begin: "@point ", schema: point, end: ";" }, { begin: "@flag ", schema: { type: "boolean" }, end: ";" }] };
    const check = schemaValidator(point);
    for (const [where, req] of [["response_format", { response_format: tag }],
      ["structured_outputs", { structured_outputs: { structural_tag: JSON.stringify(tag) } }]]) {
      const r = await client.completions.create({ model: "tiny", prompt: "points:", max_tokens: 120, seed: 1,
        logit_bias: { ...kQuoteBias, [at]: 100 }, ...req });
      const text = r.choices[0].text;
      const parts = [...text.matchAll(/@(point|flag) ([\s\S]*?);/g)];
      assert.ok(parts.length >= 2, `${where}: ${text}`);
      for (const [, kind, body] of parts) {
        assert.ok(kind === "point" ? check(JSON.parse(body)) : typeof JSON.parse(body) === "boolean", `${where}: ${body}`);
      }
      // Every "@" opens a part: the text after the last complete part is free text or
      // the start of one cut by max_tokens.
      const rest = text.split(/@(?:point|flag) [\s\S]*?;/);
      for (const piece of rest.slice(0, -1)) assert.ok(!piece.includes("@"), `${where}: stray trigger in ${JSON.stringify(text)}`);
    }
  }],
  ["what cannot be honoured is a 400 in OpenAI's shape, and the server stays up", async () => {
    const bad = [
      [{ response_format: schemaOf({ type: "array", uniqueItems: true }) }, "uniqueItems"],
      [{ response_format: schemaOf({ not: { type: "string" } }) }, "not"],
      [{ response_format: schemaOf({ type: "integer", multipleOf: 5 }) }, "multipleOf"],
      [{ response_format: schemaOf({ $ref: "https://example.com/s.json" }) }, "$ref"],
      [{ response_format: { type: "structural_tag", format: {} } }, "'format' form is not supported"],
      [{ structured_outputs: { structural_tag: "{}" } }, "structural_tag.triggers"],
      [{ response_format: { type: "structural_tag", triggers: ["<f"], structures: [{ begin: "<g>", end: "</g>" }] } }, "starts with no trigger"],
      [{ structured_outputs: { regex: "a(b" } }, "regex"],
      [{ structured_outputs: { grammar: "root ::= missing" } }, "missing"],
      [{ structured_outputs: { regex: "a", choice: ["a"] } }, "only one"],
      [{ response_format: { type: "json_object" }, guided_regex: "a" }, "only one"],
      [{ guided_choice: [] }, "guided_choice"],
    ];
    for (const [fields, word] of bad) {
      await assert.rejects(client.chat.completions.create({ model: "tiny", messages: user, ...fields }),
        (e) => e.status === 400 && e.error?.type === "BadRequestError" && e.message.includes(word), JSON.stringify(fields));
    }
    const ok = await client.chat.completions.create({ model: "tiny", messages: user, max_tokens: 5, guided_choice: ["ok"] });
    assert.equal(ok.choices[0].message.content, "ok");
  }],
  ["Qwen3.5's 248,320 rows: hand-written schemas validate and no padding row is sampled", async () => {
    // qwen3.5-tiny pads the tokenizer's 151,669 ids to 248,320 lm_head rows, as Qwen3.5
    // does; the random head gives the padding rows logits like any other, so only the
    // mask keeps them out. Streamed completions return the sampled ids (return_token_ids).
    const hybrid = await startServer(pagellm, makeTinyModel(pagellm, "qwen3.5-tiny"));
    try {
      const c35 = new OpenAI({ baseURL: `${hybrid.url}/v1`, apiKey: "none", maxRetries: 0, timeout: 300000 });
      let checked = 0;
      for (const [i, schema] of kSuite.entries()) {
        const c = { text: "", ids: [], finish_reason: null };
        for await (const chunk of await c35.completions.create({ model: "tiny", prompt: "JSON:", max_tokens: 500,
          temperature: 1, seed: i, logit_bias: kQuoteBias, stream: true, return_token_ids: true,
          response_format: schemaOf(schema) })) {
          for (const ch of chunk.choices) {
            c.text += ch.text ?? "";
            c.ids.push(...(ch.token_ids ?? []));
            c.finish_reason = ch.finish_reason ?? c.finish_reason;
          }
        }
        assert.ok(c.ids.length > 0, `suite-${i}: no token_ids`);
        for (const id of c.ids) assert.ok(id < 151669, `suite-${i}: sampled padding row ${id}`);
        if (c.finish_reason === "length") continue;
        assert.ok(schemaValidator(schema)(JSON.parse(c.text)), `suite-${i}: ${c.text}`);
        checked++;
      }
      assert.ok(checked >= kSuite.length - 1, `only ${checked} of ${kSuite.length} finished`);
    } finally {
      hybrid.proc.kill("SIGTERM");
      await hybrid.exited;
    }
  }],
];

const failures = await runCases(cases, filter);
server.proc.kill("SIGTERM");
await server.exited;
console.log(`${failures ? "FAILED" : "OK"}: ${failures} failed`);
process.exit(failures ? 1 : 0);
