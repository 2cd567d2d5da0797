// End-to-end forced tool calls and reasoning-aware structured outputs through the
// official `openai` SDK on a random-weight dummy model: tool_choice "required" / named
// must yield calls whose arguments validate (ajv) against the tool's schema, in hermes
// and qwen3_coder format, streaming and not; "auto" with strict tools leaves free text
// alone; with --reasoning-parser qwen3 the grammar starts after </think> and the JSON
// lands in `content`.
//
//   node tests/e2e/structured_tools_test.mjs build/pagellm [case-filter]
import assert from "node:assert/strict";
import { importRef, makeTinyModel, runCases, startServer } from "./harness.mjs";
import { schemaValidator } from "./schema_validator.mjs";

const [pagellm, filter] = process.argv.slice(2);
if (!pagellm) {
  console.error("usage: structured_tools_test.mjs PAGELLM_BINARY [case-filter]");
  process.exit(2);
}
const { default: OpenAI } = await importRef("openai/index.mjs");
const model = makeTinyModel(pagellm);
const plain = await startServer(pagellm, model, []);
const thinking = await startServer(pagellm, model, ["--reasoning-parser", "qwen3"]);
const coder = await startServer(pagellm, model, ["--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder"]);
const clientOf = (s) => new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "none", maxRetries: 0, timeout: 300000 });

// Bounded strings: a random model rarely closes an unbounded one before max_tokens.
const weather = { type: "object", properties: { city: { type: "string", maxLength: 12 },
  unit: { enum: ["C", "F"] }, days: { type: "integer", minimum: 1, maximum: 7 } }, required: ["city", "days"] };
const clock = { type: "object", properties: { tz: { type: "string", pattern: "^[A-Z]{3}$" } }, required: ["tz"] };
const tools = [{ type: "function", function: { name: "get_weather", parameters: weather } },
  { type: "function", function: { name: "get_time", parameters: clock } }];
const schemaOf = { get_weather: weather, get_time: clock };
const messages = [{ role: "user", content: "What is the weather in Paris?" }];
const noThink = { chat_template_kwargs: { enable_thinking: false } };

function checkCalls(calls, names) {
  assert.ok(calls.length >= 1, "no tool call");
  for (const call of calls) {
    assert.ok(names.includes(call.function.name), call.function.name);
    const check = schemaValidator(schemaOf[call.function.name]);
    assert.ok(check(JSON.parse(call.function.arguments)), `${call.function.arguments} ${JSON.stringify(check.errors)}`);
  }
}

// Streams a chat completion; returns {content, reasoning, calls, finish} with tool-call
// deltas joined by index.
async function streamed(client, params) {
  const out = { content: "", reasoning: "", calls: [], finish: null };
  for await (const chunk of await client.chat.completions.create({ ...params, stream: true })) {
    for (const c of chunk.choices) {
      out.content += c.delta.content ?? "";
      out.reasoning += c.delta.reasoning_content ?? "";
      for (const d of c.delta.tool_calls ?? []) {
        out.calls[d.index] ??= { function: { name: "", arguments: "" } };
        out.calls[d.index].function.name += d.function?.name ?? "";
        out.calls[d.index].function.arguments += d.function?.arguments ?? "";
      }
      if (c.finish_reason) out.finish = c.finish_reason;
    }
  }
  return out;
}

const cases = [
  ["named tool_choice forces that call (hermes), streaming and not", async () => {
    const client = clientOf(plain);
    for (let seed = 0; seed < 3; seed++) {
      const params = { model: "tiny", messages, tools, max_tokens: 200, seed,
        tool_choice: { type: "function", function: { name: "get_time" } } };
      const r = await client.chat.completions.create(params);
      assert.equal(r.choices[0].message.tool_calls.length, 1);
      checkCalls(r.choices[0].message.tool_calls, ["get_time"]);
      const s = await streamed(client, params);
      assert.equal(s.calls.length, 1);
      checkCalls(s.calls, ["get_time"]);
    }
  }],
  ["tool_choice required: one or more calls of the given tools, n = 2", async () => {
    const r = await clientOf(plain).chat.completions.create({ model: "tiny", messages, tools, max_tokens: 400, n: 2,
      seed: 5, tool_choice: "required" });
    for (const c of r.choices) {
      assert.equal(c.finish_reason, "tool_calls");
      checkCalls(c.message.tool_calls, ["get_weather", "get_time"]);
    }
  }],
  ["qwen3_coder XML calls parse back into arguments that match the schema", async () => {
    const client = clientOf(coder);
    for (let seed = 0; seed < 3; seed++) {
      const r = await client.chat.completions.create({ model: "tiny", messages, tools, max_tokens: 200, seed,
        tool_choice: { type: "function", function: { name: "get_weather" } } });
      checkCalls(r.choices[0].message.tool_calls, ["get_weather"]);
    }
  }],
  ["bad tool_choice is a 400 naming tool_choice", async () => {
    const client = clientOf(plain);
    for (const [extra, word] of [[{ tool_choice: { type: "function", function: { name: "fly" } } }, "fly"],
      [{ tool_choice: "required", tools: undefined }, "tools"],
      [{ tool_choice: "required", response_format: { type: "json_object" } }, "cannot be combined"],
      [{ tool_choice: "always" }, "always"]]) {
      await assert.rejects(client.chat.completions.create({ model: "tiny", messages, tools, ...extra }),
        (e) => e.status === 400 && e.error?.param === "tool_choice" && e.message.includes(word), JSON.stringify(extra));
    }
  }],
  ["tool_choice auto with strict tools: free text stays free; strict + response_format is a 400", async () => {
    // Only a call of a strict tool is constrained (from its <tool_call> line on; grammar
    // tests cover the call itself): text that opens no call is what it is without strict.
    const client = clientOf(coder);
    const strictTools = tools.map((t) => ({ ...t, function: { ...t.function, strict: t.function.name === "get_weather" } }));
    const base = { model: "tiny", messages, max_tokens: 24, temperature: 0, ignore_eos: true, ...noThink };
    // tool_choice "none" renders the same prompt (the tools are in it) without any constraint.
    const free = await client.chat.completions.create({ ...base, tools: strictTools, tool_choice: "none" });
    const held = await client.chat.completions.create({ ...base, tools: strictTools });
    assert.equal(held.choices[0].message.content, free.choices[0].message.content);
    await assert.rejects(client.chat.completions.create({ ...base, tools: strictTools, response_format: { type: "json_object" } }),
      (e) => e.status === 400 && e.message.includes("strict"));
    // get_time's pattern cannot be written in the XML form: strict there is refused, not dropped.
    await assert.rejects(client.chat.completions.create({ ...base, tools: tools.map((t) => ({ ...t, function: { ...t.function, strict: true } })) }),
      (e) => e.status === 400 && e.message.includes("pattern"));
  }],
  ["reasoning: the grammar starts after </think>, JSON in content", async () => {
    const client = clientOf(thinking);
    const schema = { type: "object", properties: { n: { type: "integer" }, ok: { type: "boolean" } }, required: ["n", "ok"] };
    const rf = { type: "json_schema", json_schema: { name: "s", schema } };
    const check = schemaValidator(schema);
    // Thinking off: the template closed the think block, the grammar applies at once.
    const off = await client.chat.completions.create({ model: "tiny", messages, max_tokens: 200, response_format: rf, ...noThink });
    assert.ok(check(JSON.parse(off.choices[0].message.content)), off.choices[0].message.content);
    assert.equal(off.choices[0].message.reasoning_content, undefined);
    // Thinking on: the reasoning is free text (identical to an unconstrained greedy run).
    const base = { model: "tiny", messages, max_tokens: 12, temperature: 0 };
    const free = await client.chat.completions.create(base);
    const held = await client.chat.completions.create({ ...base, response_format: rf });
    assert.equal(held.choices[0].message.reasoning_content, free.choices[0].message.reasoning_content);
    assert.equal(held.choices[0].message.content, null);
    // A bias on </think> makes the random model end its reasoning; the JSON follows.
    const [think] = (await (await fetch(`${thinking.url}/tokenize`, { method: "POST",
      headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "</think>" }) })).json()).tokens;
    const params = { model: "tiny", messages, max_tokens: 200, seed: 3, logit_bias: { [think]: 100 }, response_format: rf };
    const r = await client.chat.completions.create(params);
    assert.ok(check(JSON.parse(r.choices[0].message.content)), r.choices[0].message.content);
    assert.ok(!(r.choices[0].message.reasoning_content ?? "").includes("{"));
    const s = await streamed(client, params);
    assert.equal(s.content, r.choices[0].message.content);
    assert.equal(s.reasoning, r.choices[0].message.reasoning_content ?? "");
  }],
  ["reasoning + forced tool call: the call follows the reasoning", async () => {
    const r = await clientOf(thinking).chat.completions.create({ model: "tiny", messages, tools, max_tokens: 200,
      tool_choice: { type: "function", function: { name: "get_weather" } }, ...noThink });
    checkCalls(r.choices[0].message.tool_calls, ["get_weather"]);
  }],
];

const failures = await runCases(cases, filter);
for (const s of [plain, thinking, coder]) s.proc.kill("SIGTERM");
await Promise.all([plain.exited, thinking.exited, coder.exited]);
console.log(`${failures ? "FAILED" : "OK"}: ${failures} failed`);
process.exit(failures ? 1 : 0);
