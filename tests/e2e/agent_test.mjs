// End-to-end tests of `pagellm agent` beside a router and two `pagellm serve` workers
// (qwen3-tiny dummy model, loopback): the kv_pressure rule fires against a KV-saturated
// worker (drained in the router, its newest requests preempted by recompute through
// POST /preempt_requests, the prefix cache reset skipped since no idle cached blocks
// dominate, admitted again once the pressure is gone) and every stressed request still
// completes with the token ids of an unloaded run; the unready rule restarts a killed worker with the operator's
// command and admits it again, and when that restart fails to bring it back the agent
// falls back to the degraded-mode command; every action leaves an audit record.
//
//   node tests/e2e/agent_test.mjs build/pagellm [case-filter]
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, mkdtempSync, existsSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { makeTinyModel, metricValue, parseMetrics, runCases, sleep, startProcess } from "./harness.mjs";

const [pagellm, filter] = process.argv.slice(2);
if (!pagellm) {
  console.error("usage: agent_test.mjs PAGELLM_BINARY [case-filter]");
  process.exit(2);
}
const model = makeTinyModel(pagellm);
const tmp = mkdtempSync(path.join(os.tmpdir(), "pagellm-agent-"));
// 8 MiB of KV cache: 8,192 tokens, which the stress below overfills.
const workerArgs = ["--disable-log-stats", "--http-threads", "1", "--no-enable-prefix-caching", "--kv-cache-memory",
  String(8 << 20), "--max-model-len", "2048", "--served-model-name", "tiny"];
const serveArgs = (port) => ["serve", model, "--host", "127.0.0.1", "--port", String(port), ...workerArgs];
const workers = await Promise.all([0, 1].map(() => startProcess(pagellm, serveArgs(0))));
const router = await startProcess(pagellm, ["router", "--host", "127.0.0.1", "--port", "0", "--health-interval", "0.2",
  ...workers.flatMap((w) => ["--worker", w.url])]);

// The restart command: a new worker on the same port, its pid kept for the cleanup.
const pidFile = path.join(tmp, "{port}.pid");  // per port, written by the commands
const serveCmd = [pagellm, ...serveArgs("{port}")].join(" ");
const rulesFile = path.join(tmp, "rules.json");
writeFileSync(rulesFile, JSON.stringify({
  kv_pressure: { above: 0.3, for_s: 1, release_below: 0.1, preempt_to: 0.15 },
  // The normal restart does nothing while the file "fast-path-broken" exists.
  unready: { failures: 2, restart_timeout_s: 8, max_restarts: 5,
             restart_command: `test -f ${tmp}/fast-path-broken || { ${serveCmd} > ${tmp}/restarted.log 2>&1 & ` +
               `echo $! > ${pidFile}; }`,
             fallback_command: `${serveCmd} --max-num-batched-tokens 512 > ${tmp}/degraded.log 2>&1 & echo $! > ${pidFile}` },
}));
const auditFile = path.join(tmp, "audit.jsonl");
const agent = await startProcess(pagellm, ["agent", "--router", router.url, "--rules", rulesFile, "--audit-log",
  auditFile, "--interval", "0.3"], 60000, /agent watching/);
const pidOf = (w) => path.join(tmp, `${w.port}.pid`);
process.on("exit", () => {
  for (const w of workers) if (existsSync(pidOf(w))) try { process.kill(Number(readFileSync(pidOf(w), "utf8")), "SIGKILL"); } catch {}
  rmSync(tmp, { recursive: true, force: true });
});

const audit = () => existsSync(auditFile)
  ? readFileSync(auditFile, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
const workerList = async () => (await (await fetch(`${router.url}/admin/workers`)).json()).data;
const healthOf = async (url) => (await workerList()).find((w) => w.url === url)?.health;
async function waitFor(what, fn, ms = 30000) {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (await fn()) return;
    await sleep(150);
  }
  throw new Error(`timed out waiting for ${what}; audit: ${JSON.stringify(audit())}`);
}
async function stream(url, prompt, maxTokens) {
  const res = await fetch(`${url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tiny", prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true }) });
  assert.equal(res.status, 200);
  return res.json();
}

// A greedy stream with vLLM's return_token_ids: the generated token ids, in order.
async function tokenIds(url, prompt, maxTokens) {
  const res = await fetch(`${url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tiny", prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true,
                           return_token_ids: true }) });
  assert.equal(res.status, 200);
  const ids = [];
  for (const line of (await res.text()).split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    for (const c of JSON.parse(line.slice(6)).choices ?? []) ids.push(...(c.token_ids ?? []));
  }
  return ids;
}
const metricsOf = async (url) => parseMetrics(await (await fetch(`${url}/metrics`)).text());

const cases = [
  ["kv_pressure: a KV-saturated worker is drained, its newest requests preempted, all complete unchanged", async () => {
    await waitFor("both workers ready", async () => (await workerList()).every((w) => w.health === "ready"));
    const target = workers[0];
    const prompts = Array.from({ length: 12 }, (_, i) => `stress ${i} `.repeat(120));
    // The unloaded run: each prompt alone, on the other worker.
    const expected = [];
    for (const p of prompts) expected.push(await tokenIds(workers[1].url, p, 600));
    // Long prompts and long outputs straight at the worker fill its KV cache.
    const load = prompts.map((p) => tokenIds(target.url, p, 600));
    await waitFor("the drain", async () => audit().some((r) => r.action === "drain_and_reclaim"), 60000);
    const drain = audit().find((r) => r.action === "drain_and_reclaim");
    assert.equal(drain.rule, "kv_pressure");
    assert.equal(drain.worker, target.url);
    assert.ok(drain.measurement.kv_cache_usage_perc > 0.3);
    assert.equal(drain.result.drain.status, 200);
    // The newest requests were preempted, and the record names what that freed.
    const preempt = drain.result.preempt;
    assert.equal(preempt.status, 200, JSON.stringify(preempt));
    assert.ok(preempt.body.num_preempted_requests >= 1, JSON.stringify(preempt));
    assert.ok(preempt.body.num_freed_blocks > 0, JSON.stringify(preempt));
    assert.ok(preempt.body.kv_cache_usage_after <= 0.15, JSON.stringify(preempt));
    assert.equal(drain.result.freed.preempt.blocks, preempt.body.num_freed_blocks);
    assert.equal(drain.result.freed.preempt.requests, preempt.body.num_preempted_requests);
    // No prefix caching here: no idle cached blocks, so the reset was not even tried.
    assert.match(drain.result.reset_prefix_cache.skipped, /do not dominate/);
    assert.equal(await healthOf(target.url), "draining");
    const got = await Promise.all(load);
    for (const [i, ids] of got.entries()) {
      assert.equal(ids.length, 600, `request ${i}: ${ids.length} tokens`);  // nothing lost
      assert.deepEqual(ids, expected[i], `request ${i}: greedy tokens differ from the unloaded run`);
    }
    const m = await metricsOf(target.url);
    assert.ok(metricValue(m, "vllm:num_preemptions_total") >= preempt.body.num_preempted_requests);
    console.log(`  preempted ${preempt.body.num_preempted_requests} requests, freed ${preempt.body.num_freed_blocks} ` +
      `blocks: KV usage ${preempt.body.kv_cache_usage_before.toFixed(3)} -> ${preempt.body.kv_cache_usage_after.toFixed(3)}; ` +
      `12/12 streams identical to the unloaded run (${metricValue(m, "vllm:num_preemptions_total")} preemptions in all)`);
    await waitFor("the readmission", async () => audit().some((r) => r.action === "readmit"));
    await waitFor("the worker ready again", async () => (await healthOf(target.url)) === "ready");
  }],
  ["unready: a killed worker is restarted by the rule's command and admitted again", async () => {
    const victim = workers[1];
    victim.proc.kill("SIGKILL");
    await waitFor("the restart", async () => audit().some((r) => r.action === "restart" && r.worker === victim.url), 90000);
    const rec = audit().find((r) => r.action === "restart" && r.worker === victim.url);
    assert.ok(rec.measurement.consecutive_failures >= 2);
    assert.match(rec.command, new RegExp(`--port ${victim.port} `));
    assert.equal(rec.result.exit_code, 0);
    assert.equal(rec.result.ready_again, true);
    await waitFor("the restarted worker ready in the router", async () => (await healthOf(victim.url)) === "ready");
    const r = await stream(router.url, "after the restart", 4);
    assert.equal(r.usage.completion_tokens, 4);
  }],
  ["a restart that does not bring the worker back: degraded mode", async () => {
    const victim = workers[1];
    writeFileSync(path.join(tmp, "fast-path-broken"), "");
    process.kill(Number(readFileSync(pidOf(victim), "utf8")), "SIGKILL");
    await waitFor("the degraded restart", async () =>
      audit().some((r) => r.action === "restart_degraded" && r.worker === victim.url), 90000);
    const restarts = audit().filter((r) => r.worker === victim.url && r.rule === "unready");
    const failed = restarts.find((r) => r.action === "restart" && r.result.ready_again === false);
    assert.ok(failed, `no failed restart first: ${JSON.stringify(restarts)}`);
    const degraded = restarts.find((r) => r.action === "restart_degraded");
    // The stressed worker was busy, never dead: the agent did not restart it.
    assert.ok(!audit().some((r) => r.rule === "unready" && r.worker === workers[0].url), "a busy worker was restarted");
    assert.equal(degraded.measurement.last_restart_failed, true);
    assert.match(degraded.command, /--max-num-batched-tokens 512/);
    assert.equal(degraded.result.ready_again, true);
    await waitFor("the degraded worker ready in the router", async () => (await healthOf(victim.url)) === "ready");
    assert.equal((await stream(router.url, "degraded but serving", 4)).usage.completion_tokens, 4);
  }],
  ["every audit record has the documented fields", async () => {
    for (const r of audit()) {
      for (const k of ["time", "rule", "worker", "measurement", "action", "command", "result"]) assert.ok(k in r, k);
      assert.match(r.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    agent.proc.kill("SIGTERM");
    assert.equal((await agent.exited).code, 0);
  }],
];

const failures = await runCases(cases, filter);
process.exit(failures ? 1 : 0);
