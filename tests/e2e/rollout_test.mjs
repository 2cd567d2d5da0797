// End-to-end tests of `pagellm rollout` over a router and two `pagellm serve` workers
// (qwen3-tiny dummy model, loopback; with --netns four workers on hosts of their own,
// network namespaces this test creates and deletes) under steady load through the router: a rollout to
// the same version completes with zero failed client requests; a rollout to a
// deliberately slower configuration (--max-num-seqs 1: requests queue behind each other,
// TTFT several times longer, no more CPU used) is rolled back automatically after the
// first worker, again with zero failed requests. The judging threshold is --max-regression 1.0 here (P99 doubled) so
// that noise on a shared 2-core machine cannot fail the first case; the default is the
// runbook's 0.15.
//
//   node tests/e2e/rollout_test.mjs build/pagellm [case-filter]
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync, mkdtempSync, existsSync, rmSync, readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { makeTinyModel, runCases, sleep, startProcess } from "./harness.mjs";
import { createHosts } from "./netns.mjs";

const args = process.argv.slice(2);
const netns = args.includes("--netns");
const [pagellm, filter] = args.filter((a) => a !== "--netns");
if (!pagellm) {
  console.error("usage: rollout_test.mjs PAGELLM_BINARY [--netns] [case-filter]");
  process.exit(2);
}
const model = makeTinyModel(pagellm);
const dir = mkdtempSync(path.join(os.tmpdir(), "pagellm-rollout-"));
const base = ["--disable-log-stats", "--http-threads", "1", "--kv-cache-memory", String(32 << 20), "--max-model-len",
  "2048", "--served-model-name", "tiny"];

// Loopback: two workers. --netns: four, each on a host of its own (netns.mjs,
// 10.232.N.2:8000), started by `ip netns exec`; the commands find the namespace from
// {host}'s third octet. Pid files are per {host}.{port}.
const tag = `pgr${process.pid % 100000}`;
const hosts = netns ? createHosts(tag, 232, 4) : [];
if (!hosts) process.exit(77);
process.on("exit", () => {
  for (const f of readdirSync(dir).filter((f) => f.endsWith(".pid"))) {
    try { process.kill(Number(readFileSync(path.join(dir, f), "utf8")), "SIGKILL"); } catch {}
  }
  rmSync(dir, { recursive: true, force: true });
});
const serve = (host, port, extra = []) => ["serve", model, "--host", host, "--port", String(port), ...base, ...extra];
const workers = netns
  ? await Promise.all(hosts.map((h) => startProcess("ip", ["netns", "exec", h.ns, pagellm, ...serve(h.ip, 8000)])))
  : await Promise.all([0, 1].map(() => startProcess(pagellm, serve("127.0.0.1", 0))));
workers.forEach((w, i) => {
  if (netns) w.url = `http://${hosts[i].ip}:8000`;
  writeFileSync(path.join(dir, `${netns ? hosts[i].ip : "127.0.0.1"}.${w.port}.pid`), String(w.proc.pid));
});
const inHost = netns ? `ip netns exec ${tag}n$(echo {host} | cut -d. -f3) ` : "";
// round_robin: the slow worker gets its share of the load (a load-aware policy would
// shield it, and hide the regression the rollout must catch).
const router = await startProcess(pagellm, ["router", "--host", "127.0.0.1", "--port", "0", "--health-interval", "0.2",
  "--policy", "round_robin",
  ...workers.flatMap((w) => ["--worker", w.url])]);
const startCmd = (extra) => `${inHost}${[pagellm, ...serve("{host}", "{port}", extra)].join(" ")} > ` +
  `${dir}/{host}.{port}.log 2>&1 & echo $! > ${dir}/{host}.{port}.pid`;
const stopCmd = `kill -TERM $(cat ${dir}/{host}.{port}.pid)`;

// Steady load through the router: `concurrency` clients, 600-token prompts, `out` tokens out.
function startLoad(concurrency, out = 24) {
  const stats = { ok: 0, failed: 0, errors: [] };
  let running = true;
  const prompt = (i) => `request ${i} ` + "of the steady load goes on ".repeat(100);
  const clients = Array.from({ length: concurrency }, async (_, c) => {
    for (let i = 0; running; i++) {
      try {
        const res = await fetch(`${router.url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "tiny", prompt: prompt(c * 100000 + i), max_tokens: out, temperature: 0, ignore_eos: true }) });
        const body = await res.json();
        if (res.status === 200 && body.usage?.completion_tokens === out) stats.ok++;
        else { stats.failed++; stats.errors.push(`${res.status} ${JSON.stringify(body).slice(0, 200)}`); }
      } catch (e) {
        stats.failed++;
        stats.errors.push(String(e));
      }
    }
  });
  return { stats, stop: async () => { running = false; await Promise.all(clients); } };
}

function runRollout(newExtra, minRequests, maxRegression, auditFile) {
  const args = ["rollout", "--router", router.url, "--new", startCmd(newExtra), "--stop", stopCmd,
    "--old", startCmd([]), "--window", "8", "--min-requests", String(minRequests), "--max-regression", String(maxRegression),
    "--audit-log", auditFile];
  return new Promise((resolve) => {
    const p = spawn(pagellm, args, { stdio: ["ignore", "pipe", "pipe"] });
    let log = "";
    p.stdout.on("data", (d) => { log += d; });
    p.stderr.on("data", (d) => { log += d; });
    p.on("exit", (code) => resolve({ code, log,
      audit: existsSync(auditFile) ? readFileSync(auditFile, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [] }));
  });
}
const workerList = async () => (await (await fetch(`${router.url}/admin/workers`)).json()).data;
async function allReady() {
  for (let i = 0; i < 100; i++) {
    if ((await workerList()).every((w) => w.health === "ready")) return;
    await sleep(100);
  }
  throw new Error(`workers not ready: ${JSON.stringify(await workerList())}`);
}

const cases = [
  ["a rollout to the same version completes under load with zero failed requests", async () => {
    await allReady();
    const load = startLoad(4);
    const r = await runRollout([], 60, 1.0, path.join(dir, "audit1.jsonl"));
    await load.stop();
    const compares = r.audit.filter((a) => a.action === "compare");
    console.log(`  ${load.stats.ok} requests served, ${load.stats.failed} failed; P99 TTFT new/old: ` +
      compares.map((c) => `${c.result.p99_ttft_new_s}/${c.result.p99_ttft_old_s} s`).join(", "));
    assert.equal(r.code, 0, r.log);
    assert.equal(load.stats.failed, 0, load.stats.errors.slice(0, 3).join("\n"));
    assert.equal(compares.length, workers.length);
    for (const c of compares) assert.equal(c.result.verdict, "ok");
    assert.equal(r.audit.filter((a) => a.action === "start_new" && a.result.ready).length, workers.length);
    await allReady();
  }],
  ["a slower new version is rolled back automatically, zero failed requests", async () => {
    // Six closed-loop clients, long answers: one request at a time on the slow worker,
    // so the clients pile up there and each waits for the others' 64 tokens.
    const load = startLoad(6, 64);
    const r = await runRollout(["--max-num-seqs", "1"], 20, 0.5, path.join(dir, "audit2.jsonl"));
    await load.stop();
    const compare = r.audit.find((a) => a.action === "compare");
    console.log(`  ${load.stats.ok} requests served, ${load.stats.failed} failed; P99 TTFT new ` +
      `${compare?.result.p99_ttft_new_s} s vs old ${compare?.result.p99_ttft_old_s} s`);
    assert.notEqual(r.code, 0, "the rollout did not fail");
    assert.match(r.log, /regressed/);
    assert.equal(compare.result.verdict, "regression");
    assert.ok(r.audit.some((a) => a.action === "rollback" && a.result.done === true));
    assert.equal(r.audit.filter((a) => a.action === "start_new").length, 1, "it went on after the regression");
    assert.equal(load.stats.failed, 0, load.stats.errors.slice(0, 3).join("\n"));
    await allReady();
  }],
];

// On four hosts the rollout of all of them is what matters; the rollback is the loopback run's.
const failures = await runCases(netns ? cases.slice(0, 1) : cases, filter);
process.exit(failures ? 1 : 0);
