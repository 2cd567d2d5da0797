// Benchmark of `pagellm router` policies over 4 `pagellm serve` workers (tiny dummy
// model, small KV cache) against one instance, all in one run so figures are ratios.
//
//   node bench/router/router_bench.mjs build/pagellm [--conversations 32] [--turns 4]
//
// Workloads:
//   prefix: many multi-turn conversations sharing a few long system prompts (each turn
//           sends the whole history, as chat clients do);
//   unique: the same shape with a unique system prompt per conversation (no sharing).
// For each policy it reports the prefix-cache hit rate the workers measured
// (sum of vllm:prefix_cache_hits_total / queries_total deltas over workers), P50/P99
// TTFT seen by the client and the router's own estimate; then the router's added
// latency at a high request rate (P50/P99 of pagellm_router:added_latency_seconds and
// client latency through the router vs direct, 1-token requests).
import { execSync } from "node:child_process";
import { makeTinyModel, metricValue, parseMetrics, sleep, startProcess } from "../../tests/e2e/harness.mjs";

const args = process.argv.slice(2);
const pagellm = args[0];
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const numConversations = opt("conversations", 32);
const numTurns = opt("turns", 4);
const numSystems = opt("systems", 4);
const concurrency = opt("concurrency", 8);
const outputTokens = opt("output-tokens", 8);
const kvMiB = opt("kv-mib", 6);

const model = makeTinyModel(pagellm);
const serve = (kv) => startProcess(pagellm, ["serve", model, "--host", "127.0.0.1", "--port", "0", "--max-model-len",
  "2048", "--served-model-name", "tiny", "--kv-cache-memory", String(kv << 20), "--disable-log-stats", "--http-threads", "1"]);
const workers = await Promise.all([0, 1, 2, 3].map(() => serve(kvMiB)));
const big = await serve(4 * kvMiB);

const words = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega".split(" ");
const text = (seed, n) => Array.from({ length: n }, (_, i) => words[(seed * 7 + i * 13 + (i >> 3)) % words.length]).join(" ");
function conversations(shared) {
  return Array.from({ length: numConversations }, (_, c) => ({
    system: shared ? `System prompt ${c % numSystems}: ${text(c % numSystems, 300)}` : `System ${c}: ${text(1000 + c, 300)}`,
    users: Array.from({ length: numTurns }, (_, t) => `Question ${t} of conversation ${c}: ${text(c * 31 + t, 20)}`),
  }));
}

async function ttftOf(url, messages) {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tiny", messages, max_tokens: outputTokens, temperature: 0, ignore_eos: true, stream: true }) });
  const reader = res.body.getReader();
  let ttft = null, answer = "", buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += new TextDecoder().decode(value);
    for (let i; (i = buf.indexOf("\n\n")) >= 0; buf = buf.slice(i + 2)) {
      const ev = buf.slice(0, i);
      if (!ev.startsWith("data: {")) continue;
      const content = JSON.parse(ev.slice(6)).choices?.[0]?.delta?.content;
      if (content) {
        ttft ??= performance.now() - t0;
        answer += content;
      }
    }
  }
  if (res.status !== 200 || ttft === null) throw new Error(`request failed: HTTP ${res.status}`);
  return { ttft, answer };
}

// Runs every conversation (turns in order, `concurrency` conversations at once).
async function runWorkload(url, convs) {
  const ttfts = [];
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    for (let c; (c = next++) < convs.length;) {
      const messages = [{ role: "system", content: convs[c].system }];
      for (const user of convs[c].users) {
        messages.push({ role: "user", content: user });
        const r = await ttftOf(url, messages);
        ttfts.push(r.ttft);
        messages.push({ role: "assistant", content: r.answer });
      }
    }
  }));
  return ttfts.sort((a, b) => a - b);
}
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
async function cacheCounters(list) {
  let hits = 0, queries = 0;
  for (const w of list) {
    const m = parseMetrics(await (await fetch(`${w.url}/metrics`)).text());
    hits += metricValue(m, "vllm:prefix_cache_hits_total");
    queries += metricValue(m, "vllm:prefix_cache_queries_total");
  }
  return { hits, queries };
}

async function measure(label, url, list, convs, routerUrl) {
  const before = await cacheCounters(list);
  const t0 = performance.now();
  const ttfts = await runWorkload(url, convs);
  const seconds = (performance.now() - t0) / 1000;
  const after = await cacheCounters(list);
  const hitRate = (after.hits - before.hits) / Math.max(1, after.queries - before.queries);
  let estimate = "";
  if (routerUrl) {
    const m = parseMetrics(await (await fetch(`${routerUrl}/metrics`)).text());
    estimate = metricValue(m, "pagellm_router:prefix_hit_rate_estimate").toFixed(3);
  }
  return { label, hitRate, p50: pct(ttfts, 50), p99: pct(ttfts, 99), seconds, estimate };
}

async function withRouter(policy, fn) {
  const router = await startProcess(pagellm, ["router", "--port", "0", "--policy", policy, "--health-interval", "0.25",
    ...workers.flatMap((w) => ["--worker", w.url])]);
  for (let i = 0; i < 100; i++) {
    if ((await fetch(`${router.url}/health`)).status === 200) break;
    await sleep(100);
  }
  await sleep(600);  // every worker ready
  try {
    return await fn(router);
  } finally {
    router.proc.kill("SIGTERM");
    await router.exited;
  }
}

// Each workload/policy pair gets fresh caches: a unique salt in every system prompt.
let salt = 0;
const salted = (convs) => convs.map((c) => ({ ...c, system: `[run ${salt}] ${c.system}` }));
const rows = [];
for (const [workload, shared] of [["prefix", true], ["unique", false]]) {
  const convs = conversations(shared);
  salt++;
  rows.push({ workload, ...(await measure("one instance (4x KV)", big.url, [big], salted(convs))) });
  for (const policy of ["round_robin", "least_kv", "cache_aware", "default"]) {
    salt++;
    rows.push({ workload, ...(await withRouter(policy, (r) => measure(policy, r.url, workers, salted(convs), r.url))) });
  }
}

// Router overhead: 1-token completions at a high rate, direct vs through the router.
async function latencies(url, n, rate) {
  const out = [];
  const body = JSON.stringify({ model: "tiny", prompt: "hi", max_tokens: 1, temperature: 0 });
  await Promise.all(Array.from({ length: n }, async (_, i) => {
    await sleep((i * 1000) / rate);
    const t0 = performance.now();
    const res = await fetch(`${url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
    await res.text();
    out.push(performance.now() - t0);
  }));
  return out.sort((a, b) => a - b);
}
const overhead = await withRouter("default", async (router) => {
  const direct = await latencies(workers[0].url, 400, 200);
  const routed = await latencies(router.url, 400, 200);
  const m = parseMetrics(await (await fetch(`${router.url}/metrics`)).text());
  const count = metricValue(m, "pagellm_router:added_latency_seconds_count");
  const under1ms = metricValue(m, 'pagellm_router:added_latency_seconds_bucket{policy="default",le="0.001"}');
  return { direct, routed, count, under1ms };
});

const cpu = execSync("lscpu | grep 'Model name' | sed 's/.*: *//'").toString().trim();
console.log(`CPU: ${cpu}; ${numConversations} conversations x ${numTurns} turns, ${numSystems} shared system prompts, ` +
  `concurrency ${concurrency}, ${outputTokens} output tokens, 4 workers x ${kvMiB} MiB KV (one instance: ${4 * kvMiB} MiB)`);
console.log("| workload | routing | prefix hit rate (workers) | router estimate | TTFT P50 ms | TTFT P99 ms | wall s |");
console.log("|---|---|---|---|---|---|---|");
for (const r of rows) {
  console.log(`| ${r.workload} | ${r.label} | ${r.hitRate.toFixed(3)} | ${r.estimate || "-"} | ${r.p50.toFixed(1)} | ` +
    `${r.p99.toFixed(1)} | ${r.seconds.toFixed(1)} |`);
}
console.log(`router overhead at 200 req/s, 1-token requests: direct P50 ${pct(overhead.direct, 50).toFixed(2)} ms ` +
  `P99 ${pct(overhead.direct, 99).toFixed(2)} ms; via router P50 ${pct(overhead.routed, 50).toFixed(2)} ms ` +
  `P99 ${pct(overhead.routed, 99).toFixed(2)} ms; router-added latency <= 1 ms for ${overhead.under1ms} of ` +
  `${overhead.count} requests`);
process.exit(0);
