// Benchmark of `pagellm router` policies over 4 `pagellm serve` workers (tiny dummy
// model, small KV cache) against one instance, all in one run so figures are ratios.
//
//   node bench/router/router_bench.mjs build/pagellm [--conversations 32] [--turns 4]
//
// Workloads:
//   prefix: many multi-turn conversations sharing a few long system prompts (each turn
//           sends the whole history, as chat clients do);
//   unique: the same shape with a unique system prompt per conversation (turns still
//           share their conversation's history);
//   none:   single-turn requests, each prompt unique from its first token (no shared
//           prefix at all): every policy should match round_robin here.
// For each policy it reports the prefix-cache hit rate the workers measured
// (sum of vllm:prefix_cache_hits_total / queries_total deltas over workers), P50/P99
// TTFT seen by the client, the router's own estimate, and throughput; then the
// router's added latency at 500 requests/s against fast upstreams (fast_worker.mjs, so
// the workers' speed is not part of the figure): the router's own
// pagellm_router:added_latency_seconds histogram, and client latency through the router
// vs direct.
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
const overheadRate = opt("rate", 500);
const overheadRequests = opt("requests", 2500);
const overheadOnly = args.includes("--overhead-only");
const numFast = opt("fast-workers", 4);
const numSingle = opt("single-requests", 192);

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
  const requests = ttfts.length;
  const seconds = (performance.now() - t0) / 1000;
  const after = await cacheCounters(list);
  const hitRate = (after.hits - before.hits) / Math.max(1, after.queries - before.queries);
  let estimate = "";
  if (routerUrl) {
    const m = parseMetrics(await (await fetch(`${routerUrl}/metrics`)).text());
    estimate = metricValue(m, "pagellm_router:prefix_hit_rate_estimate").toFixed(3);
  }
  return { label, hitRate, p50: pct(ttfts, 50), p99: pct(ttfts, 99), seconds, estimate, rps: requests / seconds };
}

async function withRouter(policy, fn, upstreams = workers) {
  const router = await startProcess(pagellm, ["router", "--port", "0", "--policy", policy, "--health-interval", "0.25",
    ...upstreams.flatMap((w) => ["--worker", w.url])]);
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
// No shared prefix: one turn each, the conversation number first.
const singleTurns = () => Array.from({ length: numSingle }, (_, c) => ({
  system: `${c} ${text(5000 + c, 200)}`, users: [`Question ${c}: ${text(c * 17, 20)}`] }));
const rows = [];
for (const [workload, make] of [["prefix", () => conversations(true)], ["unique", () => conversations(false)],
  ["none", singleTurns]].filter(() => !overheadOnly)) {
  const convs = make();
  salt++;
  rows.push({ workload, ...(await measure("one instance (4x KV)", big.url, [big], salted(convs))) });
  for (const policy of ["round_robin", "least_kv", "cache_aware", "default"]) {
    salt++;
    rows.push({ workload, ...(await withRouter(policy, (r) => measure(policy, r.url, workers, salted(convs), r.url))) });
  }
}

// Router overhead: 1-token completions at `overheadRate` requests/s against fast
// upstreams, direct vs through the router.
async function latencies(url, n, rate) {
  const out = [];
  const body = JSON.stringify({ model: "fast", prompt: "hi", max_tokens: 1, temperature: 0 });
  await Promise.all(Array.from({ length: n }, async (_, i) => {
    await sleep((i * 1000) / rate);
    const t0 = performance.now();
    const res = await fetch(`${url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
    await res.text();
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    out.push(performance.now() - t0);
  }));
  return out.sort((a, b) => a - b);
}
// The smallest histogram bound under which a fraction q of the observations fell.
function histogramQuantile(m, name, q) {
  const buckets = Object.entries(m).filter(([k]) => k.startsWith(`${name}_bucket{`))
    .map(([k, v]) => [k.includes('le="+Inf"') ? Infinity : Number(k.match(/le="([^"]+)"/)[1]), v])
    .sort((a, b) => a[0] - b[0]);
  const total = buckets.at(-1)[1];
  return buckets.find(([, v]) => v >= q * total)[0];
}
for (const w of workers) w.proc.kill("SIGTERM");
big.proc.kill("SIGTERM");
const fast = await Promise.all(Array.from({ length: numFast }, () => startProcess(process.execPath,
  [new URL("./fast_worker.mjs", import.meta.url).pathname])));
const overhead = await withRouter("default", async (router) => {
  await latencies(router.url, 200, overheadRate);  // warm connections
  const direct = await latencies(fast[0].url, overheadRequests, overheadRate);
  const before = parseMetrics(await (await fetch(`${router.url}/metrics`)).text());
  const routed = await latencies(router.url, overheadRequests, overheadRate);
  const m = parseMetrics(await (await fetch(`${router.url}/metrics`)).text());
  for (const k of Object.keys(m)) if (k.startsWith("pagellm_router:added_latency_seconds")) m[k] -= before[k] ?? 0;
  const name = "pagellm_router:added_latency_seconds";
  const count = m[`${name}_count{policy="default"}`];
  const under1ms = m[`${name}_bucket{policy="default",le="0.001"}`];
  return { direct, routed, count, under1ms, p99: histogramQuantile(m, name, 0.99), p50: histogramQuantile(m, name, 0.5) };
}, fast);

const cpu = execSync("lscpu | grep 'Model name' | sed 's/.*: *//'").toString().trim();
console.log(`CPU: ${cpu}; ${numConversations} conversations x ${numTurns} turns, ${numSystems} shared system prompts, ` +
  `concurrency ${concurrency}, ${outputTokens} output tokens, 4 workers x ${kvMiB} MiB KV (one instance: ${4 * kvMiB} MiB)`);
console.log("| workload | routing | prefix hit rate (workers) | router estimate | TTFT P50 ms | TTFT P99 ms | requests/s | vs round_robin |");
console.log("|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  const rr = rows.find((x) => x.workload === r.workload && x.label === "round_robin");
  console.log(`| ${r.workload} | ${r.label} | ${r.hitRate.toFixed(3)} | ${r.estimate || "-"} | ${r.p50.toFixed(1)} | ` +
    `${r.p99.toFixed(1)} | ${r.rps.toFixed(1)} | ${(r.rps / rr.rps).toFixed(3)} |`);
}
const ms = (s) => (s * 1000).toFixed(s < 0.001 ? 2 : 1);
console.log(`router overhead at ${overheadRate} req/s, ${overheadRequests} 1-token requests, ${numFast} fast upstreams: ` +
  `router-added latency P50 <= ${ms(overhead.p50)} ms, P99 <= ${ms(overhead.p99)} ms (histogram bounds), ` +
  `<= 1 ms for ${overhead.under1ms} of ${overhead.count}; client latency direct P50 ` +
  `${pct(overhead.direct, 50).toFixed(2)} / P99 ${pct(overhead.direct, 99).toFixed(2)} ms, via router P50 ` +
  `${pct(overhead.routed, 50).toFixed(2)} / P99 ${pct(overhead.routed, 99).toFixed(2)} ms`);
process.exit(0);
