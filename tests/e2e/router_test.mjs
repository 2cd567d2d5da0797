// End-to-end tests of `pagellm router` over several `pagellm serve` workers on loopback
// (qwen3-tiny dummy model, small KV cache): the official openai SDK through the router,
// OpenAI-shaped errors, prefix affinity, the admin API and draining, conversation
// affinity across a worker's restart (x-session-id and `user`), a worker killed in
// the middle of 200 greedy streams of four kinds (n = 2, logprobs, chat and completions;
// every stream completes with the text, logprobs and usage of an undisturbed run), a
// failed worker probed back in, and the worker file.
//
//   node tests/e2e/router_test.mjs build/pagellm [case-filter]
import assert from "node:assert/strict";
import { writeFileSync, mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { importRef, makeTinyModel, metricValue, parseMetrics, runCases, sleep, startProcess, startServer } from "./harness.mjs";

const [pagellm, filter] = process.argv.slice(2);
if (!pagellm) {
  console.error("usage: router_test.mjs PAGELLM_BINARY [case-filter]");
  process.exit(2);
}
const { default: OpenAI } = await importRef("openai/index.mjs");
const model = makeTinyModel(pagellm);
const workerArgs = ["--disable-log-stats", "--http-threads", "1"];  // startServer: 64 MiB of KV cache
const workers = await Promise.all([0, 1, 2].map(() => startServer(pagellm, model, workerArgs)));
const tmp = mkdtempSync(path.join(os.tmpdir(), "pagellm-router-"));
const workerFile = path.join(tmp, "workers.txt");
writeFileSync(workerFile, "# none yet\n");
const router = await startProcess(pagellm, ["router", "--host", "127.0.0.1", "--port", "0", "--policy", "default",
  "--health-interval", "0.2", "--worker-file", workerFile, ...workers.flatMap((w) => ["--worker", w.url])]);
const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: "none", maxRetries: 0, timeout: 60000 });
const direct = new OpenAI({ baseURL: `${workers[0].url}/v1`, apiKey: "none", maxRetries: 0, timeout: 60000 });

async function json(method, url, body, headers = {}) {
  const res = await fetch(url, { method, headers: { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) });
  const text = await res.text();
  let parsed = null;
  try { parsed = JSON.parse(text); } catch {}
  return { status: res.status, text, json: parsed };
}
const routerMetrics = async () => parseMetrics((await json("GET", `${router.url}/metrics`)).text);
const workerList = async () => (await json("GET", `${router.url}/admin/workers`)).json.data;
async function waitFor(what, fn, ms = 15000) {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (await fn()) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}
const requestsTo = (m, url) => metricValue(m, `pagellm_router:requests_total{worker="${url}"}`);

// A greedy completion stream read to the end through `c`: text, chunk count, usage.
async function streamText(c, prompt, maxTokens, onFirstChunk = () => {}) {
  const stream = await c.completions.create({ model: "tiny", prompt, max_tokens: maxTokens, temperature: 0,
    ignore_eos: true, stream: true, stream_options: { include_usage: true } });
  let text = "", usage = null, finish = null;
  const ids = new Set();
  for await (const chunk of stream) {
    if (ids.size === 0) onFirstChunk();
    ids.add(chunk.id);
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      text += ch.text ?? "";
      if (ch.finish_reason) finish = ch.finish_reason;
      assert.equal(ch.token_ids, undefined, "token ids the client did not ask for leaked");
    }
  }
  return { text, usage, finish, ids };
}

// A greedy stream (chat or completions) read to the end through `c`, per choice: text,
// finish reason, logprobs (tokens and values); and usage, the stream ids seen.
async function streamChoices(c, { chat, body }, maxTokens) {
  const params = { model: "tiny", max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true,
    stream_options: { include_usage: true }, ...body };
  const stream = chat ? await c.chat.completions.create(params) : await c.completions.create(params);
  const choices = [];
  let usage = null;
  const ids = new Set();
  for await (const chunk of stream) {
    ids.add(chunk.id);
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      const out = choices[ch.index] ??= { text: "", finish: null, tokens: [], values: [], tops: [] };
      out.text += (chat ? ch.delta?.content : ch.text) ?? "";
      if (ch.finish_reason) out.finish = ch.finish_reason;
      assert.equal(ch.token_ids, undefined, "token ids the client did not ask for leaked");
      if (chat && ch.logprobs?.content) {
        for (const t of ch.logprobs.content) {
          out.tokens.push(t.token);
          out.values.push(t.logprob);
          out.tops.push(t.top_logprobs.map((a) => a.token));
        }
      } else if (!chat && ch.logprobs) {
        out.tokens.push(...ch.logprobs.tokens);
        out.values.push(...ch.logprobs.token_logprobs);
        out.tops.push(...ch.logprobs.text_offset);  // completions: the offsets must continue
      }
    }
  }
  return { choices, usage, ids };
}

// A resumed stream against its undisturbed reference: the same text per choice, the
// same logprobs to the bit (a resume recomputes the tokens so far in a prefill, which
// the engine makes bit-identical to the decode steps of the undisturbed run), the same
// usage, one stream id.
function sameStream(got, want, what) {
  assert.equal(got.choices.length, want.choices.length, `${what}: choices`);
  got.choices.forEach((g, j) => {
    const w = want.choices[j];
    assert.equal(g.text, w.text, `${what} choice ${j}: text`);
    assert.equal(g.finish, w.finish, `${what} choice ${j}: finish_reason`);
    assert.deepEqual(g.tokens, w.tokens, `${what} choice ${j}: logprob tokens`);
    assert.deepEqual(g.tops, w.tops, `${what} choice ${j}: top logprobs / text offsets`);
    assert.deepEqual(g.values, w.values, `${what} choice ${j}: logprob values`);
  });
  assert.equal(got.usage.completion_tokens, want.usage.completion_tokens, `${what}: completion_tokens`);
  assert.equal(got.usage.prompt_tokens, want.usage.prompt_tokens, `${what}: prompt_tokens`);
  assert.equal(got.ids.size, 1, `${what}: one stream id across the resume`);
}

const cases = [
  ["all workers become ready", async () => {
    await waitFor("3 ready workers", async () => (await workerList()).filter((w) => w.health === "ready").length === 3);
    assert.equal((await json("GET", `${router.url}/health`)).status, 200);
    const models = await client.models.list();
    assert.equal(models.data[0].id, "tiny");
  }],
  ["openai SDK through the router matches a worker", async () => {
    const params = { model: "tiny", messages: [{ role: "user", content: "Hello router" }], max_tokens: 10,
      temperature: 0, ignore_eos: true };
    const viaRouter = await client.chat.completions.create(params);
    const viaWorker = await direct.chat.completions.create(params);
    assert.equal(viaRouter.choices[0].message.content, viaWorker.choices[0].message.content);
    assert.equal(viaRouter.usage.completion_tokens, 10);
    const s = await streamText(client, "stream me", 12);
    const d = await streamText(direct, "stream me", 12);
    assert.equal(s.text, d.text);
    assert.equal(s.usage.completion_tokens, 12);
    assert.equal(s.usage.prompt_tokens, d.usage.prompt_tokens);
    assert.equal(s.ids.size, 1);
  }],
  ["errors keep OpenAI's shape", async () => {
    const bad = await json("POST", `${router.url}/v1/completions`, "{not json");
    assert.equal(bad.status, 400);
    assert.equal(typeof bad.json.error.message, "string");
    const unknown = await json("POST", `${router.url}/v1/completions`, { model: "nope", prompt: "x", max_tokens: 1 });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.type, "NotFoundError");
    assert.equal((await json("GET", `${router.url}/nope`)).status, 404);
    assert.equal((await json("GET", `${router.url}/v1/completions`)).status, 405);
  }],
  ["a shared prefix sticks to one worker", async () => {
    const before = await routerMetrics();
    const system = "You are a careful assistant. ".repeat(12);
    for (let i = 0; i < 6; i++) {
      await client.completions.create({ model: "tiny", prompt: `${system} question ${i}`, max_tokens: 2, temperature: 0 });
    }
    const after = await routerMetrics();
    const deltas = workers.map((w) => requestsTo(after, w.url) - requestsTo(before, w.url));
    assert.equal(Math.max(...deltas), 6, `requests per worker: ${deltas}`);
    assert.ok(metricValue(after, "pagellm_router:prefix_hit_rate_estimate") > 0);
  }],
  ["a worker killed in the middle of 200 streams: every stream completes, token-identical", async () => {
    // Four kinds of stream, so a resume must keep n > 1, logprobs and usage right.
    const kinds = [
      (i) => ({ chat: false, body: { prompt: `conversation ${i} goes on and on` } }),
      (i) => ({ chat: false, body: { prompt: `two answers to ${i}`, n: 2, logprobs: 2 } }),
      (i) => ({ chat: true, body: { messages: [{ role: "user", content: `chat ${i}` }], logprobs: true, top_logprobs: 2 } }),
      (i) => ({ chat: true, body: { messages: [{ role: "user", content: `twice ${i}` }], n: 2 } }),
    ];
    const requests = Array.from({ length: 200 }, (_, i) => kinds[i % kinds.length](i));
    const reference = [];
    for (let i = 0; i < requests.length; i += 25) {  // undisturbed, 25 at a time
      reference.push(...await Promise.all(requests.slice(i, i + 25).map((r) => streamChoices(direct, r, 40))));
    }
    const before = await routerMetrics();
    const running = requests.map((r) => streamChoices(client, r, 40));
    await sleep(1500);
    const victim = workers[2];
    victim.proc.kill("SIGKILL");
    const results = await Promise.all(running);
    for (let i = 0; i < requests.length; i++) sameStream(results[i], reference[i], `stream ${i}`);
    const after = await routerMetrics();
    const resumes = metricValue(after, "pagellm_router:resumes_total") - metricValue(before, "pagellm_router:resumes_total");
    const retries = metricValue(after, "pagellm_router:retries_total") - metricValue(before, "pagellm_router:retries_total");
    console.log(`  ${resumes} resumed, ${retries} retried`);
    assert.ok(resumes > 0, "the kill cut no stream");
    await waitFor("the dead worker taken out", async () =>
      (await workerList()).find((w) => w.url === victim.url).health === "failed");
  }],
  ["a failed worker is probed back in", async () => {
    const victim = workers[2];
    const revived = await startProcess(pagellm, ["serve", model, "--host", "127.0.0.1", "--port", String(victim.port),
      "--max-model-len", "2048", "--served-model-name", "tiny", "--kv-cache-memory", String(64 << 20), ...workerArgs]);
    workers[2] = revived;
    await waitFor("the revived worker ready", async () =>
      (await workerList()).find((w) => w.url === victim.url).health === "ready");
  }],
  ["drain: no new requests, running ones finish", async () => {
    const target = workers[1];
    const longOne = streamText(new OpenAI({ baseURL: `${target.url}/v1`, apiKey: "x", maxRetries: 0 }), "long", 64);
    assert.equal((await json("POST", `${router.url}/admin/workers/drain`, { url: target.url })).status, 200);
    const before = await routerMetrics();
    await Promise.all(Array.from({ length: 6 }, (_, i) =>
      client.completions.create({ model: "tiny", prompt: `after drain ${i}`, max_tokens: 2, temperature: 0 })));
    const after = await routerMetrics();
    assert.equal(requestsTo(after, target.url) - requestsTo(before, target.url), 0);
    assert.equal((await longOne).usage.completion_tokens, 64);
    assert.equal((await workerList()).find((w) => w.url === target.url).health, "draining");
    assert.equal((await json("POST", `${router.url}/admin/workers/remove`, { url: target.url })).status, 200);
    assert.equal((await workerList()).some((w) => w.url === target.url), false);
    assert.equal((await json("POST", `${router.url}/admin/workers`, { url: target.url })).status, 200);
    await waitFor("re-added worker ready", async () =>
      (await workerList()).find((w) => w.url === target.url)?.health === "ready");
  }],
  ["sessions: a conversation stays on its worker, moves once when it is restarted, and stays there", async () => {
    await waitFor("3 ready workers", async () => (await workerList()).filter((w) => w.health === "ready").length === 3);
    // Turns of a conversation named by the x-session-id header (or, below, OpenAI's `user`).
    let turn = 0;
    const send = (session, byUser = false) => json("POST", `${router.url}/v1/completions`,
      { model: "tiny", prompt: `turn ${turn++} of a conversation that is not like the others`, max_tokens: 2,
        temperature: 0, ...(byUser ? { user: session } : {}) },
      byUser ? {} : { "x-session-id": session });
    // Which workers served `n` turns of `session`.
    async function servedBy(session, n, byUser = false) {
      const before = await routerMetrics();
      for (let i = 0; i < n; i++) assert.equal((await send(session, byUser)).status, 200);
      const after = await routerMetrics();
      return workers.map((w) => w.url).filter((url) => requestsTo(after, url) > requestsTo(before, url));
    }
    const [home, ...others] = await servedBy("conv-A", 4);
    assert.deepEqual(others, [], "one session, several workers");
    assert.equal((await servedBy("conv-B", 3, /*byUser=*/true)).length, 1);
    // Restart conv-A's worker as a rollout does: drain, stop, start on the same port, readmit.
    const idx = workers.findIndex((w) => w.url === home);
    assert.equal((await json("POST", `${router.url}/admin/workers/drain`, { url: home })).status, 200);
    const moved = await servedBy("conv-A", 3);
    assert.equal(moved.length, 1, `while draining: ${moved}`);
    assert.notEqual(moved[0], home);
    workers[idx].proc.kill("SIGTERM");
    await workers[idx].exited;
    workers[idx] = await startProcess(pagellm, ["serve", model, "--host", "127.0.0.1", "--port", String(workers[idx].port),
      "--max-model-len", "2048", "--served-model-name", "tiny", "--kv-cache-memory", String(64 << 20), ...workerArgs]);
    assert.equal((await json("POST", `${router.url}/admin/workers/remove`, { url: home })).status, 200);
    assert.equal((await json("POST", `${router.url}/admin/workers`, { url: home })).status, 200);
    await waitFor("the restarted worker ready", async () => (await workerList()).find((w) => w.url === home)?.health === "ready");
    // Readmitted: conv-A stays where its history is cached now.
    assert.deepEqual(await servedBy("conv-A", 3), moved);
    const m = await routerMetrics();
    assert.equal(metricValue(m, "pagellm_router:session_moves_total"), 1);
    assert.ok(metricValue(m, "pagellm_router:decisions_total") > 0);
    assert.ok(Object.keys(m).some((k) => k.startsWith("pagellm_router:decisions_total") && k.includes('reason="session"')));
  }],
  ["pagellm serve answers /health 503 while draining", async () => {
    const w = await startServer(pagellm, model, [...workerArgs, "--shutdown-timeout", "60"]);
    // Long enough to outlast the check on a fast machine (200 tokens once finished first).
    let streaming;
    const started = new Promise((resolve) => { streaming = resolve; });
    const longOne = streamText(new OpenAI({ baseURL: `${w.url}/v1`, apiKey: "x", maxRetries: 0 }), "drain me", 1500,
      () => streaming());
    await started;
    w.proc.kill("SIGTERM");
    await sleep(100);
    assert.equal((await json("GET", `${w.url}/health`)).status, 503);
    assert.equal((await longOne).usage.completion_tokens, 1500);
    assert.equal((await w.exited).code, 0);
  }],
  ["the worker file is re-read", async () => {
    const extra = await startServer(pagellm, model, workerArgs);
    writeFileSync(workerFile, `# added by the test\n${extra.url}\n`);
    await waitFor("file worker ready", async () => (await workerList()).find((w) => w.url === extra.url)?.health === "ready");
    writeFileSync(workerFile, "\n");
    await waitFor("file worker removed", async () => !(await workerList()).some((w) => w.url === extra.url));
    extra.proc.kill("SIGTERM");
    await extra.exited;
  }],
];

const failures = await runCases(cases, filter);
process.exit(failures ? 1 : 0);
