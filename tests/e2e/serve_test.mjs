// End-to-end tests of `pagellm serve` through the official `openai` SDK and raw HTTP:
// chat and completions (streaming and not), usage and cached tokens, logprobs, n, seed,
// stop, errors (400/401/404/405/413), greedy results under concurrency, aborts on
// disconnect, /tokenize against Hugging Face (jinja + tokenizers), promtool, and
// draining on SIGTERM.
//
//   node tests/e2e/serve_test.mjs build/pagellm [case-filter]
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { importRef, makeTinyModel, metricValue, parseMetrics, runCases, sleep, startServer } from "./harness.mjs";

const [pagellm, filter] = process.argv.slice(2);
if (!pagellm) {
  console.error("usage: serve_test.mjs PAGELLM_BINARY [case-filter]");
  process.exit(2);
}
const { default: OpenAI } = await importRef("openai/index.mjs");
const kApiKey = "sk-e2e-test";
const model = makeTinyModel(pagellm);
const server = await startServer(pagellm, model, ["--api-key", kApiKey]);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: kApiKey, maxRetries: 0, timeout: 60000 });
const user = (content) => [{ role: "user", content }];
const greedy = { temperature: 0, max_tokens: 12, ignore_eos: true };

async function raw(method, route, body, headers = {}) {
  const res = await fetch(server.url + route, {
    method, headers: { "content-type": "application/json", authorization: `Bearer ${kApiKey}`, ...headers },
    body: typeof body === "string" || body === undefined ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, text, json };
}
const metrics = async () => parseMetrics((await raw("GET", "/metrics")).text);
async function tokenizeMessages(messages, extra = {}) {
  const r = await raw("POST", "/tokenize", { model: "tiny", messages, ...extra });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

async function chatStreamText(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = "", finish = null, usage = null, role = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      text += c.delta.content ?? "";
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, usage, role };
}

const cases = [
  ["models", async () => {
    const list = await client.models.list();
    assert.equal(list.data.length, 1);
    assert.equal(list.data[0].id, "tiny");
    assert.equal(list.data[0].max_model_len, 2048);
  }],
  ["chat non-streaming and streaming agree", async () => {
    const params = { model: "tiny", messages: user("Tell me about paged attention."), ...greedy };
    const r = await client.chat.completions.create(params);
    assert.equal(r.object, "chat.completion");
    assert.equal(r.choices[0].message.role, "assistant");
    assert.equal(r.choices[0].finish_reason, "length");
    assert.equal(r.usage.completion_tokens, 12);
    const tok = await tokenizeMessages(params.messages);
    assert.equal(r.usage.prompt_tokens, tok.count);
    assert.equal(r.usage.total_tokens, tok.count + 12);
    const s = await chatStreamText(params);
    assert.equal(s.role, "assistant");
    assert.equal(s.text, r.choices[0].message.content);
    assert.equal(s.finish, "length");
    assert.equal(s.usage.completion_tokens, 12);
    assert.equal(s.usage.prompt_tokens, r.usage.prompt_tokens);
    // continuous_usage_stats: every chunk carries usage; completion tokens never decrease.
    const chunks = [];
    for await (const c of await client.chat.completions.create({ ...params, stream: true,
      stream_options: { include_usage: true, continuous_usage_stats: true } })) chunks.push(c);
    assert.ok(chunks.length >= 3);
    for (let i = 0; i < chunks.length; i++) {
      assert.equal(chunks[i].usage.prompt_tokens, r.usage.prompt_tokens);
      if (i > 0) assert.ok(chunks[i].usage.completion_tokens >= chunks[i - 1].usage.completion_tokens);
    }
    assert.equal(chunks.at(-1).usage.completion_tokens, 12);
    assert.deepEqual(chunks.at(-1).choices, []);
  }],
  ["completions: prompt forms, streaming, echo", async () => {
    const base = { model: "tiny", ...greedy, max_tokens: 6 };
    const a = await client.completions.create({ ...base, prompt: "The capital of France is" });
    assert.equal(a.object, "text_completion");
    assert.equal(a.usage.completion_tokens, 6);
    const ids = (await raw("POST", "/tokenize", { prompt: "The capital of France is" })).json.tokens;
    const b = await client.completions.create({ ...base, prompt: ids });
    assert.equal(b.choices[0].text, a.choices[0].text, "token-id prompt = text prompt");
    const multi = await client.completions.create({ ...base, prompt: ["The capital of France is", "Hello"] });
    assert.equal(multi.choices.length, 2);
    assert.deepEqual(multi.choices.map((c) => c.index), [0, 1]);
    assert.equal(multi.choices[0].text, a.choices[0].text);
    const nested = await client.completions.create({ ...base, prompt: [ids, ids] });
    assert.equal(nested.choices[1].text, a.choices[0].text);
    assert.equal(nested.usage.prompt_tokens, 2 * ids.length);
    const echo = await client.completions.create({ ...base, prompt: "The capital of France is", echo: true });
    assert.equal(echo.choices[0].text, "The capital of France is" + a.choices[0].text);
    let streamed = "";
    for await (const chunk of await client.completions.create({ ...base, prompt: "The capital of France is", stream: true })) {
      streamed += chunk.choices.map((c) => c.text).join("");
    }
    assert.equal(streamed, a.choices[0].text);
  }],
  ["usage reports cached tokens on a repeated prompt", async () => {
    const prompt = "Prefix caching test. ".repeat(40);
    const first = await client.completions.create({ model: "tiny", prompt, ...greedy, max_tokens: 2 });
    const second = await client.completions.create({ model: "tiny", prompt, ...greedy, max_tokens: 2 });
    const n = first.usage.prompt_tokens;
    assert.ok(n > 100, `prompt has ${n} tokens`);
    const cached = second.usage.prompt_tokens_details.cached_tokens;
    assert.ok(cached >= n - 32 && cached < n, `cached ${cached} of ${n}`);
    assert.equal(second.choices[0].text, first.choices[0].text);
  }],
  ["chat logprobs shape", async () => {
    const r = await client.chat.completions.create({ model: "tiny", messages: user("Hi"), ...greedy, max_tokens: 5,
      logprobs: true, top_logprobs: 3 });
    const content = r.choices[0].logprobs.content;
    assert.equal(content.length, 5);
    let joined = "";
    for (const e of content) {
      assert.ok(e.logprob <= 0);
      assert.equal(e.top_logprobs.length, 3);
      for (let i = 1; i < 3; i++) assert.ok(e.top_logprobs[i - 1].logprob >= e.top_logprobs[i].logprob);
      assert.equal(e.top_logprobs[0].token, e.token, "greedy picks the top token");
      assert.ok(Math.abs(e.top_logprobs[0].logprob - e.logprob) < 1e-4);
      if (!e.token.includes("\ufffd")) assert.deepEqual(e.bytes, [...Buffer.from(e.token, "utf8")]);
      joined += e.token;
    }
    if (!joined.includes("\ufffd")) assert.equal(joined, r.choices[0].message.content);
    const plain = await client.chat.completions.create({ model: "tiny", messages: user("Hi"), ...greedy, max_tokens: 2, logprobs: true });
    assert.deepEqual(plain.choices[0].logprobs.content[0].top_logprobs, []);
  }],
  ["completion logprobs shape", async () => {
    const r = await client.completions.create({ model: "tiny", prompt: "Once upon a time", ...greedy, max_tokens: 5, logprobs: 2 });
    const lp = r.choices[0].logprobs;
    assert.equal(lp.tokens.length, 5);
    assert.equal(lp.token_logprobs.length, 5);
    assert.equal(lp.top_logprobs.length, 5);
    assert.deepEqual(lp.text_offset.slice(0, 1), [0]);
    for (let i = 0; i < 5; i++) {
      assert.ok(Object.keys(lp.top_logprobs[i]).length >= 2);
      assert.ok(lp.tokens[i] in lp.top_logprobs[i]);
      if (i > 0) assert.equal(lp.text_offset[i], lp.text_offset[i - 1] + [...lp.tokens[i - 1]].length);
    }
    if (!lp.tokens.join("").includes("\ufffd")) assert.equal(lp.tokens.join(""), r.choices[0].text);
  }],
  ["n samples and seed reproducibility", async () => {
    const params = { model: "tiny", messages: user("Pick a number"), temperature: 1.0, max_tokens: 8, ignore_eos: true, seed: 1234 };
    const a = await client.chat.completions.create({ ...params, n: 3 });
    assert.equal(a.choices.length, 3);
    assert.deepEqual(a.choices.map((c) => c.index).sort(), [0, 1, 2]);
    assert.equal(a.usage.completion_tokens, 24);
    const b = await client.chat.completions.create({ ...params, n: 3 });
    assert.deepEqual(b.choices.map((c) => c.message.content), a.choices.map((c) => c.message.content));
    const one = await client.chat.completions.create(params);
    const again = await client.chat.completions.create(params);
    assert.equal(one.choices[0].message.content, again.choices[0].message.content);
  }],
  ["stop strings cut the output", async () => {
    const base = { model: "tiny", prompt: "Counting:", ...greedy, max_tokens: 24 };
    const full = (await client.completions.create(base)).choices[0].text;
    const stop = [...full].slice(6, 8).join("");
    assert.ok(stop.length > 0 && !stop.includes("\ufffd"), `output too short or odd: ${JSON.stringify(full)}`);
    const cut = await client.completions.create({ ...base, stop: [stop] });
    assert.equal(cut.choices[0].text, full.slice(0, full.indexOf(stop)));
    assert.equal(cut.choices[0].finish_reason, "stop");
    assert.equal(cut.choices[0].stop_reason, stop);
  }],
  ["errors: 400 with param, malformed JSON, missing field, too long", async () => {
    const bad = await raw("POST", "/v1/chat/completions", { model: "tiny", messages: user("x"), temperature: -1 });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, "temperature");
    assert.equal(bad.json.error.code, 400);
    assert.equal(typeof bad.json.error.type, "string");
    const malformed = await raw("POST", "/v1/completions", '{"prompt": "x",');
    assert.equal(malformed.status, 400);
    assert.match(malformed.json.error.message, /JSON/);
    const missing = await raw("POST", "/v1/chat/completions", { model: "tiny" });
    assert.equal(missing.status, 400);
    assert.equal(missing.json.error.param, "messages");
    const long = await raw("POST", "/v1/completions", { model: "tiny", prompt: Array(2100).fill(7) });
    assert.equal(long.status, 400);
    assert.match(long.json.error.message, /2048/);
    assert.match(long.json.error.message, /2100/);
    await assert.rejects(client.chat.completions.create({ model: "tiny", messages: user("x"), top_p: 7 }),
      (e) => e.status === 400);
  }],
  ["errors: 401, 404, 405, 413", async () => {
    assert.equal((await raw("GET", "/v1/models", undefined, { authorization: "Bearer wrong" })).status, 401);
    assert.equal((await raw("GET", "/v1/models", undefined, { authorization: "" })).status, 401);
    const unknownModel = await raw("POST", "/v1/chat/completions", { model: "gpt-9", messages: user("x") });
    assert.equal(unknownModel.status, 404);
    assert.match(unknownModel.json.error.message, /gpt-9/);
    assert.equal((await raw("GET", "/v1/nothing")).status, 404);
    assert.equal((await raw("GET", "/v1/chat/completions")).status, 405);
    const big = await raw("POST", "/v1/completions", JSON.stringify({ prompt: "x".repeat(33 << 20) }));
    assert.equal(big.status, 413);
    assert.equal((await raw("GET", "/health")).status, 200);
    assert.equal((await raw("GET", "/version")).json.version.length > 0, true);
  }],
  ["greedy results are identical under concurrency", async () => {
    const prompts = Array.from({ length: 8 }, (_, i) => `Request number ${i}: ${"abc ".repeat(i * 3)}`);
    const one = async (p) => (await client.completions.create({ model: "tiny", prompt: p, ...greedy, max_tokens: 16 })).choices[0].text;
    const sequential = [];
    for (const p of prompts) sequential.push(await one(p));
    const concurrent = await Promise.all(prompts.map(one));
    assert.deepEqual(concurrent, sequential);
  }],
  ["client disconnect aborts the request and frees KV", async () => {
    const before = await metrics();
    for (const delayMs of [null, 5]) {  // null: during decode (after chunks); 5: during prefill
      const controller = new AbortController();
      const req = client.chat.completions.create({ model: "tiny", messages: user("word ".repeat(delayMs ? 1500 : 10)),
        temperature: 0, max_tokens: delayMs ? 500 : 1500, ignore_eos: true, stream: true }, { signal: controller.signal });
      if (delayMs === null) {
        const stream = await req;
        let n = 0;
        try {
          for await (const _ of stream) if (++n === 5) controller.abort();
        } catch {}
      } else {
        // Abort as soon as the engine has the request (prefill of ~1500 tokens).
        req.catch(() => {});
        for (let i = 0; i < 200; i++) {
          const m = await metrics();
          if (metricValue(m, "vllm:num_requests_running") + metricValue(m, "vllm:num_requests_waiting") > 0) break;
          await sleep(delayMs);
        }
        controller.abort();
      }
    }
    let m;
    for (let i = 0; i < 100; i++) {
      m = await metrics();
      if (metricValue(m, "vllm:num_requests_running") === 0 &&
          metricValue(m, "vllm:num_aborted_requests_total") >= metricValue(before, "vllm:num_aborted_requests_total") + 2) break;
      await sleep(50);
    }
    assert.equal(metricValue(m, "vllm:num_requests_running"), 0);
    assert.equal(metricValue(m, "vllm:kv_cache_usage_perc"), 0);
    assert.equal(metricValue(m, "vllm:num_aborted_requests_total") - metricValue(before, "vllm:num_aborted_requests_total"), 2);
    assert.ok(metricValue(m, "vllm:generation_tokens_total") - metricValue(before, "vllm:generation_tokens_total") < 1500,
      "generation stopped early");
  }],
  ["/tokenize with messages equals HF jinja + HF tokenizers", async () => {
    const { Template } = await importRef("@huggingface/jinja/dist/index.js");
    const { createRequire } = await import("node:module");
    const hf = createRequire(path.join(await import("./harness.mjs").then((h) => h.refs), "/"))("@anush008/tokenizers");
    const config = JSON.parse(readFileSync(path.join(model, "tokenizer_config.json"), "utf8"));
    const special = {};
    for (const k of ["bos_token", "eos_token", "pad_token", "unk_token"]) {
      const v = config[k];
      if (v) special[k] = typeof v === "object" ? v.content : v;
    }
    const tools = [{ type: "function", function: { name: "get_weather", description: "Weather",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
    const messages = [
      { role: "system", content: "You are terse." },
      { role: "user", content: "Weather in Paris? ünïcode ✓" },
      { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function",
        function: { name: "get_weather", arguments: { city: "Paris" } } }] },
      { role: "tool", tool_call_id: "c1", content: "sunny" },
    ];
    const tokenizer = hf.Tokenizer.fromFile(path.join(model, "tokenizer.json"));
    for (const [extra, vars] of [[{}, { add_generation_prompt: true, tools: null }],
      [{ add_generation_prompt: false, tools, chat_template_kwargs: { enable_thinking: false } },
        { add_generation_prompt: false, tools, enable_thinking: false }]]) {
      const text = new Template(config.chat_template).render({ messages, ...special, ...vars });
      const want = (await tokenizer.encode(text, null, { addSpecialTokens: false })).getIds();
      const got = await tokenizeMessages(messages, extra);
      assert.deepEqual(got.tokens, [...want]);
      assert.equal(got.count, want.length);
    }
    // Arguments given as a JSON string are parsed before templating (same tokens).
    const asString = structuredClone(messages);
    asString[2].tool_calls[0].function.arguments = JSON.stringify({ city: "Paris" });
    assert.deepEqual((await tokenizeMessages(asString)).tokens, (await tokenizeMessages(messages)).tokens);
    const detok = await raw("POST", "/detokenize", { tokens: (await tokenizeMessages(messages)).tokens });
    assert.match(detok.json.prompt, /Weather in Paris\? ünïcode ✓/);
  }],
  ["list-of-parts content renders as HF jinja (Qwen3.5 template) and as vLLM's string join (Qwen3)", async () => {
    const { Template } = await importRef("@huggingface/jinja/dist/index.js");
    const { createRequire } = await import("node:module");
    const hf = createRequire(path.join(await import("./harness.mjs").then((h) => h.refs), "/"))("@anush008/tokenizers");
    const tokenizer = hf.Tokenizer.fromFile(path.join(model, "tokenizer.json"));
    const encode = async (text) => [...(await tokenizer.encode(text, null, { addSpecialTokens: false })).getIds()];
    const parts = [{ role: "user", content: [{ type: "text", text: "Part one. " }, { type: "text", text: "Part two." }] }];
    const joined = [{ role: "user", content: "Part one. \nPart two." }];
    const qwen3 = JSON.parse(readFileSync(path.join(model, "tokenizer_config.json"), "utf8")).chat_template;
    // Qwen3's template only prints content: the parts are joined with "\n" (vLLM's "string").
    const want3 = await encode(new Template(qwen3).render({ messages: joined, add_generation_prompt: true }));
    assert.deepEqual((await tokenizeMessages(parts)).tokens, want3);
    // Qwen3.5's template loops over the parts itself: auto-detected "openai", rendered as HF does.
    const template35 = path.join((await import("./harness.mjs")).sourceDir, "assets/chat_templates/qwen3.5.jinja");
    const source35 = readFileSync(template35, "utf8");
    for (const [format, messages] of [["auto", parts], ["string", joined]]) {
      const s = await startServer(pagellm, model, ["--chat-template", template35, "--chat-template-content-format", format]);
      try {
        const r = await fetch(`${s.url}/tokenize`, { method: "POST", headers: { "content-type": "application/json" },
          body: JSON.stringify({ messages: parts }) });
        const got = await r.json();
        assert.equal(r.status, 200, JSON.stringify(got));
        const text = new Template(source35).render({ messages, add_generation_prompt: true });
        if (format === "auto") assert.match(text, /Part one\. Part two\./);
        assert.deepEqual(got.tokens, await encode(text), `--chat-template-content-format ${format}`);
      } finally {
        s.proc.kill("SIGTERM");
        await s.exited;
      }
    }
  }],
  ["metrics are valid for promtool and use vLLM names", async () => {
    const text = (await raw("GET", "/metrics")).text;
    for (const name of ["vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
      "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total",
      "vllm:num_preemptions_total", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
      "vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket",
      "vllm:e2e_request_latency_seconds_bucket", "vllm:request_queue_time_seconds_bucket",
      "vllm:request_prefill_time_seconds_bucket", "vllm:request_decode_time_seconds_bucket",
      "vllm:iteration_tokens_total_bucket"]) {
      assert.ok(text.includes(`${name}{model_name="tiny"`), `missing ${name}`);
    }
    const m = parseMetrics(text);
    assert.ok(m['vllm:request_success_total{model_name="tiny",finished_reason="length"}'] > 10);
    assert.ok(metricValue(m, "vllm:prefix_cache_hits_total") > 0);
    assert.ok(m['vllm:time_to_first_token_seconds_count{model_name="tiny"}'] > 10);
    assert.ok(text.includes('vllm:time_to_first_token_seconds_bucket{model_name="tiny",le="2560"}'));
    const which = spawnSync("sh", ["-c", "command -v promtool"], { encoding: "utf8" });
    if (which.status !== 0) {
      console.log("  (promtool not installed: install Debian package 'prometheus'; skipping the promtool check)");
      return;
    }
    const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
    // vLLM's names (and ours in their style) trip two promtool lints (':' in names, and the histogram
    // vllm:iteration_tokens_total ending in _total); any other problem -- a parse error
    // above all -- fails.
    const problems = (check.stdout + check.stderr).split("\n").filter((l) => l.trim() &&
      !/^(vllm|pagellm):\S+ metric names should not contain ':'$/.test(l) &&
      l !== 'vllm:iteration_tokens_total non-counter metrics should not have "_total" suffix');
    assert.deepEqual(problems, [], `promtool: ${check.stdout}${check.stderr}`);
    assert.ok(check.status === 0 || (check.stdout + check.stderr).includes("should not contain ':'"));
  }],
  ["SIGTERM drains running requests and exits 0", async () => {
    const params = { model: "tiny", temperature: 0, max_tokens: 64, ignore_eos: true, stream: true };
    const running = [0, 1, 2].map(async (i) => {
      let text = "", finish = null, chunks = 0;
      for await (const c of await client.completions.create({ ...params, prompt: `drain ${i}` })) {
        chunks++;
        text += c.choices.map((x) => x.text).join("");
        finish = c.choices[0]?.finish_reason ?? finish;
      }
      return { text, finish, chunks };
    });
    await sleep(150);
    const t0 = Date.now();
    server.proc.kill("SIGTERM");
    await sleep(100);
    const late = await raw("GET", "/health").catch((e) => ({ status: "refused" }));
    assert.ok(late.status === 503 || late.status === "refused", `late request got ${late.status}`);
    const results = await Promise.all(running);
    for (const r of results) assert.equal(r.finish, "length");
    const { code } = await server.exited;
    assert.equal(code, 0, server.log());
    // Nothing else is in flight: the drain ends when these finish, not at the timeout.
    assert.ok(Date.now() - t0 < 10000, `drain took ${Date.now() - t0} ms`);
  }],
];

const failures = await runCases(cases, filter);
console.log(failures === 0 ? "all e2e cases passed" : `${failures} e2e case(s) failed`);
process.exit(failures === 0 ? 0 : 1);
