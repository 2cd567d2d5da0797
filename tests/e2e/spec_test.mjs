// Speculative decoding through the HTTP API (official `openai` SDK, random-weight
// qwen3-tiny): a server with n-gram drafts answers plain, streamed, JSON-schema and
// regex-constrained requests exactly as a server without them (greedy), so does one
// with a draft model (the same checkpoint: every greedy draft accepted), drafts are
// counted in /metrics, and --speculative-config values the engine cannot honour stop
// the command with an error naming them.
//
//   node tests/e2e/spec_test.mjs build/pagellm [case-filter]
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { importRef, makeTinyModel, metricValue, parseMetrics, runCases, startServer } from "./harness.mjs";
import { schemaValidator } from "./schema_validator.mjs";

const [pagellm, filter] = process.argv.slice(2);
const { default: OpenAI } = await importRef("openai/index.mjs");
const model = makeTinyModel(pagellm);
const kNgram = { method: "ngram", num_speculative_tokens: 4, prompt_lookup_min: 1, prompt_lookup_max: 3, disable_by_batch_size: 64 };
const kDraft = { model, num_speculative_tokens: 3, disable_by_batch_size: 64 };
const [plain, spec, draft] = await Promise.all([startServer(pagellm, model),
  startServer(pagellm, model, ["--speculative-config", JSON.stringify(kNgram)]),
  startServer(pagellm, model, ["--speculative-config", JSON.stringify(kDraft)])]);
const clientOf = (s) => new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "none", maxRetries: 0, timeout: 120000 });
const [plainClient, specClient] = [clientOf(plain), clientOf(spec)];
const metrics = async (s) => parseMetrics(await (await fetch(`${s.url}/metrics`)).text());

// A prompt that repeats itself, so the n-gram proposer has something to find.
const kRepeating = "def f(x):\n    return x + 1\n".repeat(6);
const schema = { type: "object", properties: { a: { type: "array", items: { type: "integer", minimum: 0, maximum: 9 }, maxItems: 12 } }, required: ["a"], additionalProperties: false };

async function both(body) {
  const [a, b] = await Promise.all([plainClient.completions.create(body), specClient.completions.create(body)]);
  return [a.choices[0], b.choices[0]];
}

const cases = [
  ["greedy completions are the same with drafts, alone and concurrent", async () => {
    const before = await metrics(spec);
    const body = { model: "tiny", prompt: kRepeating, max_tokens: 48, temperature: 0, ignore_eos: true, logprobs: 1 };
    const [a, b] = await both(body);
    assert.equal(b.text, a.text);
    assert.deepEqual(b.logprobs.tokens, a.logprobs.tokens);
    const many = await Promise.all(Array.from({ length: 4 }, (_, i) =>
      both({ ...body, prompt: kRepeating + `# ${i}\n`, max_tokens: 32 })));
    for (const [x, y] of many) assert.equal(y.text, x.text);
    const after = await metrics(spec);
    assert.ok(metricValue(after, "vllm:spec_decode_num_drafts_total") > metricValue(before, "vllm:spec_decode_num_drafts_total"),
      "the speculating server verified drafts");
    assert.equal(metricValue(await metrics(plain), "vllm:spec_decode_num_drafts_total"), 0);
  }],
  ["a draft model gives the same greedy completions, every draft accepted", async () => {
    const draftClient = clientOf(draft);
    const body = { model: "tiny", prompt: "The draft and the target agree", max_tokens: 40, temperature: 0, ignore_eos: true, logprobs: 1 };
    const bodies = Array.from({ length: 3 }, (_, i) => ({ ...body, prompt: body.prompt + ` ${i}` }));
    const [want, got] = await Promise.all([Promise.all(bodies.map((b) => plainClient.completions.create(b))),
      Promise.all(bodies.map((b) => draftClient.completions.create(b)))]);
    for (let i = 0; i < bodies.length; ++i) {
      assert.equal(got[i].choices[0].text, want[i].choices[0].text);
      assert.deepEqual(got[i].choices[0].logprobs.tokens, want[i].choices[0].logprobs.tokens);
    }
    const m = await metrics(draft);
    const drafted = metricValue(m, "vllm:spec_decode_num_draft_tokens_total");
    assert.ok(drafted > 0, "the draft model proposed");
    assert.ok(metricValue(m, "vllm:spec_decode_num_accepted_tokens_total") >= 0.9 * drafted,
      `accepted ${metricValue(m, "vllm:spec_decode_num_accepted_tokens_total")} of ${drafted}`);
  }],
  ["a stream carries the same text, some chunks several tokens", async () => {
    const body = { model: "tiny", prompt: kRepeating, max_tokens: 40, temperature: 0, ignore_eos: true };
    const [a] = await both(body);
    const stream = await specClient.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    let text = "", chunks = 0, usage = null;
    for await (const c of stream) {
      if (c.usage) usage = c.usage;
      for (const ch of c.choices) if (ch.text) { text += ch.text; ++chunks; }
    }
    assert.equal(text, a.text);
    assert.equal(usage.completion_tokens, 40);
    assert.ok(chunks <= 40, `${chunks} content chunks for 40 tokens`);
  }],
  ["JSON schema and regex outputs are the same with drafts, and valid", async () => {
    const validate = schemaValidator(schema);
    const [a, b] = await both({ model: "tiny", prompt: kRepeating, max_tokens: 60, temperature: 0,
      response_format: { type: "json_schema", json_schema: { name: "s", schema, strict: true } } });
    assert.equal(b.text, a.text);
    if (b.finish_reason === "stop") assert.ok(validate(JSON.parse(b.text)), b.text);
    const [c, d] = await both({ model: "tiny", prompt: "ab ab ab ab ab ab", max_tokens: 40, temperature: 0,
      structured_outputs: { regex: "(ab ){3,12}" } });
    assert.equal(d.text, c.text);
    assert.match(d.text, /^(ab ){3,12}$/);
  }],
  ["values the engine cannot honour are refused, naming them", async () => {
    const refuse = (config, pattern) => {
      const r = spawnSync(pagellm, ["generate", "--model", model, "--prompt", "hi", "--speculative-config", config],
        { encoding: "utf8", timeout: 60000 });
      assert.notEqual(r.status, 0, `accepted ${config}`);
      assert.match(r.stderr, pattern, `error for ${config}`);
    };
    refuse('{"method": "mtp", "num_speculative_tokens": 1}', /method mtp: the checkpoint has no multi-token-prediction head/);  // qwen3: none
    refuse('{"model": "/m/draft", "num_speculative_tokens": 4}', /draft model \/m\/draft/);
    refuse('{"method": "eagle", "model": "/m/draft", "num_speculative_tokens": 4}', /method "eagle" takes no "model"/);
    refuse('{"method": "ngram", "num_speculative_tokens": 4, "temperature": 1}', /unknown key "temperature"/);
    refuse('{"method": "ngram", "num_speculative_tokens": 0}', /"num_speculative_tokens" must be in \[1, /);
    refuse("{method: ngram}", /must be a JSON object/);
  }],
];

const failures = await runCases(cases, filter);
process.exit(failures ? 1 : 0);
