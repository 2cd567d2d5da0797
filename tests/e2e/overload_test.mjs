// End-to-end tests of overload control (qwen3-tiny dummy model): `pagellm serve` with a
// bounded waiting queue refuses a burst beyond it with 429 + Retry-After in OpenAI's
// shape (the openai SDK sees a RateLimitError) and loses nothing it accepted; a prompt
// larger than the whole token bound is a 400 at once; /reset_prefix_cache and SIGUSR2;
// /preempt_requests (the newest running request preempted by recompute, what it freed,
// the request finishing whole; bad bodies a 400 in OpenAI's shape);
// `priority` with --scheduling-policy priority (a 400 under fcfs);
// `pagellm router` sheds with 503 + Retry-After only when every worker refused.
//
//   node tests/e2e/overload_test.mjs build/pagellm [case-filter]
import assert from "node:assert/strict";
import { importRef, makeTinyModel, metricValue, parseMetrics, runCases, sleep, startProcess, startServer } from "./harness.mjs";

const [pagellm, filter] = process.argv.slice(2);
if (!pagellm) {
  console.error("usage: overload_test.mjs PAGELLM_BINARY [case-filter]");
  process.exit(2);
}
const { default: OpenAI } = await importRef("openai/index.mjs");
const model = makeTinyModel(pagellm);
const bounded = ["--disable-log-stats", "--max-num-seqs", "2", "--max-num-queued-reqs", "4",
  "--max-num-queued-tokens", "1000"];

async function post(url, path, body) {
  const res = await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, json, text, retryAfter: res.headers.get("retry-after") };
}
const completion = (i, maxTokens = 24) => ({ model: "tiny", prompt: `request ${i} of the burst`, max_tokens: maxTokens,
  temperature: 0, ignore_eos: true });

// Waits until `url`'s engine runs at least `n` requests (fixed sleeps raced the
// generation on fast machines).
async function waitRunning(url, n) {
  for (let i = 0; i < 500; i++) {
    const m = parseMetrics(await (await fetch(`${url}/metrics`)).text());
    if (metricValue(m, "vllm:num_requests_running") >= n) return;
    await sleep(20);
  }
  throw new Error(`${url} never ran ${n} requests`);
}

// A burst at `url`: every request is answered, either complete or refused with 429.
async function burst(url, n) {
  const results = await Promise.all(Array.from({ length: n }, (_, i) => post(url, "/v1/completions", completion(i))));
  const accepted = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 429);
  assert.equal(accepted.length + refused.length, n, `other statuses: ${results.map((r) => r.status)}`);
  for (const r of accepted) assert.equal(r.json.usage.completion_tokens, 24, "an accepted request lost tokens");
  for (const r of refused) {
    assert.equal(r.json.error.type, "RateLimitError");
    assert.equal(r.json.error.code, 429);
    assert.match(r.json.error.message, /max-num-queued-reqs is 4/);
    assert.ok(Number(r.retryAfter) >= 1, `Retry-After ${r.retryAfter}`);
  }
  return { accepted: accepted.length, refused: refused.length, retryAfter: refused.map((r) => Number(r.retryAfter)) };
}

const server = await startServer(pagellm, model, bounded);
const cases = [
  ["a burst beyond the queue: 429 + Retry-After, nothing accepted is lost", async () => {
    const r = await burst(server.url, 60);
    console.log(`  60 requests: ${r.accepted} accepted, ${r.refused} refused, Retry-After ${Math.min(...r.retryAfter)}-` +
      `${Math.max(...r.retryAfter)} s`);
    // A burst lands before the engine's next step: all of it counts as queued.
    assert.ok(r.accepted >= 4, `only ${r.accepted} accepted (4 queued fit)`);
    assert.ok(r.refused > 0, "nothing was refused");
    // Once the queue drained, requests are accepted again.
    assert.equal((await post(server.url, "/v1/completions", completion(999))).status, 200);
  }],
  ["the openai SDK sees a RateLimitError", async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "none", maxRetries: 0 });
    const running = Array.from({ length: 20 }, (_, i) => client.completions.create(completion(i, 32))
      .then(() => null, (e) => e));
    const errors = (await Promise.all(running)).filter((e) => e !== null);
    assert.ok(errors.length > 0, "no request was refused");
    for (const e of errors) {
      assert.ok(e instanceof OpenAI.RateLimitError, `${e}`);
      const retryAfter = typeof e.headers?.get === "function" ? e.headers.get("retry-after") : e.headers?.["retry-after"];
      assert.ok(Number(retryAfter) >= 1, `Retry-After ${retryAfter}`);
    }
  }],
  ["a prompt larger than the token bound is a 400 at once", async () => {
    const r = await post(server.url, "/v1/completions", { model: "tiny", prompt: Array(1500).fill(7), max_tokens: 1 });
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /can never be queued/);
  }],
  ["/reset_prefix_cache: refused while requests hold blocks, done when idle", async () => {
    const long = post(server.url, "/v1/completions", completion(1, 1500));
    await waitRunning(server.url, 1);
    const busy = await post(server.url, "/reset_prefix_cache", {});
    assert.equal(busy.status, 200);
    assert.equal(busy.json.reset, false);
    await long;
    const idle = await post(server.url, "/reset_prefix_cache", {});
    assert.deepEqual(idle.json, { reset: true });
    server.proc.kill("SIGUSR2");
    for (let i = 0; i < 50 && !/reset_prefix_cache: cached blocks dropped[\s\S]*reset_prefix_cache: cached blocks dropped/.test(server.log()); i++) {
      await sleep(100);
    }
    assert.match(server.log(), /received SIGUSR2/);
    assert.equal((await post(server.url, "/v1/completions", completion(2, 2))).status, 200, "still serving");
  }],
  ["/preempt_requests: the newest running request is preempted, says what it freed, and finishes whole", async () => {
    for (const [body, field] of [[{}, /num_requests/], [{ num_requests: -1 }, /num_requests/],
      [{ target_kv_cache_usage: 2 }, /target_kv_cache_usage/], [{ count: 1 }, /count: unknown field/]]) {
      const bad = await post(server.url, "/preempt_requests", body);
      assert.equal(bad.status, 400, bad.text);
      assert.equal(bad.json.error.type, "BadRequestError");
      assert.match(bad.json.error.message, field);
    }
    const before = metricValue(parseMetrics(await (await fetch(`${server.url}/metrics`)).text()), "vllm:num_preemptions_total");
    const older = post(server.url, "/v1/completions", completion(1, 1500));
    await waitRunning(server.url, 1);
    const newer = post(server.url, "/v1/completions", completion(2, 1500));
    await waitRunning(server.url, 2);
    const r = await post(server.url, "/preempt_requests", { num_requests: 1 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.num_preempted_requests, 1);
    assert.equal(r.json.request_ids.length, 1);
    assert.ok(r.json.num_freed_blocks > 0, r.text);
    assert.ok(r.json.kv_cache_usage_after < r.json.kv_cache_usage_before, r.text);
    assert.equal(r.json.num_running, 1);
    for (const done of await Promise.all([older, newer])) {
      assert.equal(done.status, 200);
      assert.equal(done.json.usage.completion_tokens, 1500, "a preempted request lost tokens");
    }
    const after = metricValue(parseMetrics(await (await fetch(`${server.url}/metrics`)).text()), "vllm:num_preemptions_total");
    assert.ok(after >= before + 1, `vllm:num_preemptions_total ${before} -> ${after}`);
  }],
  ["priority: 400 under fcfs; under --scheduling-policy priority the urgent request runs first", async () => {
    const refused = await post(server.url, "/v1/completions", { ...completion(1, 2), priority: 3 });
    assert.equal(refused.status, 400);
    assert.match(refused.json.error.message, /scheduling-policy priority/);
    const prio = await startServer(pagellm, model, ["--disable-log-stats", "--max-num-seqs", "1",
      "--scheduling-policy", "priority"]);
    const order = [];
    const run = (name, body) => post(prio.url, "/v1/completions", body).then((r) => {
      assert.equal(r.status, 200);
      order.push(name);
    });
    const first = run("first", completion(0, 1500));  // holds the only slot
    await waitRunning(prio.url, 1);
    const low = run("low", { ...completion(1, 4), priority: 10 });
    await sleep(50);
    const high = run("high", { ...completion(2, 4), priority: -1 });
    await Promise.all([first, low, high]);
    assert.deepEqual(order, ["first", "high", "low"]);
    prio.proc.kill("SIGTERM");
    await prio.exited;
  }],
  ["the router sheds with 503 + Retry-After only when every worker is saturated", async () => {
    const other = await startServer(pagellm, model, bounded);
    const router = await startProcess(pagellm, ["router", "--host", "127.0.0.1", "--port", "0", "--health-interval", "0.2",
      "--worker", server.url, "--worker", other.url]);
    await sleep(800);  // both workers probed ready
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) =>
      post(router.url, "/v1/completions", completion(i))));
    const ok = results.filter((r) => r.status === 200).length;
    const shed = results.filter((r) => r.status === 503);
    assert.equal(ok + shed.length, 60, `other statuses: ${results.map((r) => r.status)}`);
    assert.ok(ok >= 8, `only ${ok} served: 2 workers x 4 queued fit`);
    assert.ok(shed.length > 0, "nothing was shed");
    for (const r of shed) {
      assert.match(r.json.error.message, /overloaded/);
      assert.ok(Number(r.retryAfter) >= 1);
    }
    // Saturated workers are not taken out of rotation: both still serve.
    const m = parseMetrics(await (await fetch(`${router.url}/metrics`)).text());
    assert.equal(metricValue(m, "pagellm_router:worker_ready"), 2);
    console.log(`  60 requests via the router: ${ok} served, ${shed.length} shed (503)`);
  }],
];

const failures = await runCases(cases, filter);
process.exit(failures ? 1 : 0);
