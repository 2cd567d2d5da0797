// End-to-end tests of tool calling and reasoning wiring in `pagellm serve`
// (--enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3).
// A dummy model's text holds no tool-call markup, so these check the request path,
// the reasoning split (no </think> => all reasoning, as vLLM), streaming == non-
// streaming, enable_thinking=false => all content, and the flag errors.
//
//   node tests/e2e/tools_test.mjs build/pagellm
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { importRef, makeTinyModel, runCases, startServer } from "./harness.mjs";

const [pagellm, filter] = process.argv.slice(2);
if (!pagellm) {
  console.error("usage: tools_test.mjs PAGELLM_BINARY [case-filter]");
  process.exit(2);
}
const { default: OpenAI } = await importRef("openai/index.mjs");
const model = makeTinyModel(pagellm);
const tools = [{ type: "function", function: { name: "get_weather", description: "Get the weather",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
const messages = [{ role: "user", content: "What is the weather in Paris?" }];
const base = { model: "tiny", messages, temperature: 0, max_tokens: 10, ignore_eos: true };

const plain = await startServer(pagellm, model, []);
const parsed = await startServer(pagellm, model,
  ["--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--reasoning-parser", "qwen3"]);
const clientOf = (s) => new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "none", maxRetries: 0 });
const plainClient = clientOf(plain), parsedClient = clientOf(parsed);

async function streamed(client, params) {
  let reasoning = "", content = "", finish = null, toolDeltas = 0;
  for await (const chunk of await client.chat.completions.create({ ...params, stream: true })) {
    for (const c of chunk.choices) {
      reasoning += c.delta.reasoning_content ?? "";
      content += c.delta.content ?? "";
      toolDeltas += (c.delta.tool_calls ?? []).length;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { reasoning, content, finish, toolDeltas };
}

const cases = [
  ["auto tool choice without the flags is a 400 naming tool_choice", async () => {
    await assert.rejects(plainClient.chat.completions.create({ ...base, tools }),
      (e) => e.status === 400 && e.error?.param === "tool_choice" && /enable-auto-tool-choice/.test(e.message));
    const none = await plainClient.chat.completions.create({ ...base, tools, tool_choice: "none" });
    assert.equal(none.choices[0].finish_reason, "length");
    // "required" and named choices need no flags (structured_tools_test.mjs); a name
    // that is not among the tools is a 400 naming tool_choice.
    await assert.rejects(plainClient.chat.completions.create({ ...base, tools,
      tool_choice: { type: "function", function: { name: "nope" } } }),
    (e) => e.status === 400 && e.error?.param === "tool_choice");
  }],
  ["reasoning parser: unterminated thinking is all reasoning, stream == non-stream", async () => {
    // Same prompt (tools rendered) on the server without parsers: the raw text.
    const ref = (await plainClient.chat.completions.create({ ...base, tools, tool_choice: "none" })).choices[0].message.content;
    const r = await parsedClient.chat.completions.create({ ...base, tools });
    const msg = r.choices[0].message;
    assert.ok(!ref.includes("</think>"), "dummy output unexpectedly closes the reasoning");
    assert.equal(msg.reasoning_content, ref.replace("<think>", ""));
    assert.equal(msg.content, null);
    assert.deepEqual(msg.tool_calls, []);
    assert.equal(r.choices[0].finish_reason, "length");
    const s = await streamed(parsedClient, { ...base, tools });
    assert.equal(s.reasoning, msg.reasoning_content);
    assert.equal(s.content, "");
    assert.equal(s.toolDeltas, 0);
    assert.equal(s.finish, "length");
  }],
  ["enable_thinking=false: everything is content", async () => {
    const params = { ...base, chat_template_kwargs: { enable_thinking: false } };
    const ref = (await plainClient.chat.completions.create({ ...params, tools, tool_choice: "none" })).choices[0].message.content;
    const r = await parsedClient.chat.completions.create({ ...params, tools });
    assert.equal(r.choices[0].message.content, ref);
    assert.equal(r.choices[0].message.reasoning_content, undefined);
    const s = await streamed(parsedClient, { ...params, tools });
    assert.equal(s.content, ref);
    assert.equal(s.reasoning, "");
  }],
  ["unknown parser names and a tensor-parallel size that does not divide the heads fail at start-up", async () => {
    const run = (args) => spawnSync(pagellm, ["serve", model, "--port", "0", ...args], { encoding: "utf8", timeout: 60000 });
    const badParser = run(["--tool-call-parser", "nonsense"]);
    assert.notEqual(badParser.status, 0);
    assert.match(badParser.stderr, /--tool-call-parser/);
    // Tensor parallelism is supported; a size that does not divide the heads is refused.
    const tp = run(["--tensor-parallel-size", "3"]);
    assert.notEqual(tp.status, 0);
    assert.match(tp.stderr, /--tensor-parallel-size 3 does not divide num_attention_heads \(4\)/);
    const typo = run(["--max-model-length", "100"]);
    assert.notEqual(typo.status, 0);
    assert.match(typo.stderr, /did you mean --max-model-len\?/);
    const auto = run(["--enable-auto-tool-choice"]);
    assert.notEqual(auto.status, 0);
    assert.match(auto.stderr, /requires --tool-call-parser/);
  }],
];

const failures = await runCases(cases, filter);
for (const s of [plain, parsed]) s.proc.kill("SIGTERM");
await Promise.all([plain.exited, parsed.exited]);
console.log(failures === 0 ? "all tool e2e cases passed" : `${failures} tool e2e case(s) failed`);
process.exit(failures === 0 ? 0 : 1);
