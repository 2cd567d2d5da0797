// Multi-host variant of the router test: two `pagellm serve` workers in network
// namespaces of their own (separate hosts with their own addresses, joined to this one
// by veth pairs), the router on the host side. Checks greedy streams through the router
// and a worker killed mid-stream. The namespaces and links are created here and always
// deleted. Exits 77 (CTest: skipped) only when `ip netns` is not permitted.
//
//   node tests/e2e/router_netns_test.mjs build/pagellm
import assert from "node:assert/strict";
import { importRef, makeTinyModel, runCases, sleep, startProcess } from "./harness.mjs";
import { createHosts, ip } from "./netns.mjs";

const [pagellm, filter] = process.argv.slice(2);
const { default: OpenAI } = await importRef("openai/index.mjs");
const hosts = createHosts(`pgl${process.pid % 100000}`, 231, 2);
if (!hosts) process.exit(77);

const model = makeTinyModel(pagellm);
// A worker on host h: `ip netns exec NS pagellm serve --host <its address>`.
function startWorker(h) {
  return startProcess("ip", ["netns", "exec", h.ns, pagellm, "serve", model, "--host", h.ip, "--port", "8000",
    "--kv-cache-memory", String(32 << 20), "--max-model-len", "2048", "--served-model-name", "tiny",
    "--disable-log-stats", "--http-threads", "1"]);
}
const workers = await Promise.all(hosts.map(startWorker));
const router = await startProcess(pagellm, ["router", "--host", "127.0.0.1", "--port", "0", "--health-interval", "0.2",
  ...hosts.map((h) => ["--worker", `http://${h.ip}:8000`]).flat()]);
const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: "none", maxRetries: 0, timeout: 60000 });

async function streamText(prompt, maxTokens) {
  const stream = await client.completions.create({ model: "tiny", prompt, max_tokens: maxTokens, temperature: 0,
    ignore_eos: true, stream: true, stream_options: { include_usage: true } });
  let text = "", usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) text += ch.text ?? "";
  }
  return { text, usage };
}
const workerList = async () => (await (await fetch(`${router.url}/admin/workers`)).json()).data;

const cases = [
  ["both hosts become ready and serve", async () => {
    // Up to 60 s, as long as a worker may take to start on a loaded 2-core CI machine.
    for (let i = 0; i < 600 && (await workerList()).filter((w) => w.health === "ready").length < 2; i++) await sleep(100);
    const ready = (await workerList()).filter((w) => w.health === "ready").length;
    assert.equal(ready, 2, `ready workers; router log:\n${router.log()}\nworker logs:\n${workers.map((w) => w.log()).join("\n")}`);
    const r = await streamText("across hosts", 8);
    assert.equal(r.usage.completion_tokens, 8);
  }],
  ["a host's worker killed mid-stream: streams complete, token-identical", async () => {
    const prompts = Array.from({ length: 6 }, (_, i) => `netns stream ${i}`);
    const reference = [];
    for (const p of prompts) reference.push(await streamText(p, 40));
    const running = prompts.map((p) => streamText(p, 40));
    await sleep(300);
    workers[1].proc.kill("SIGKILL");
    ip("netns", "pids", hosts[1].ns).toString().split(/\s+/).filter(Boolean).forEach((p) => process.kill(Number(p), "SIGKILL"));
    const results = await Promise.all(running);
    for (let i = 0; i < prompts.length; i++) {
      assert.equal(results[i].text, reference[i].text, `stream ${i}`);
      assert.equal(results[i].usage.completion_tokens, 40);
    }
  }],
];

const failures = await runCases(cases, filter);
router.proc.kill("SIGTERM");
await router.exited;
process.exit(failures ? 1 : 0);
