// Stress test of `pagellm serve` (issue 15's bug): many concurrent streams on the tiny
// dummy model while every GET endpoint is scraped sequentially; each request must be
// answered within kBoundMs, every stream must complete, and SIGTERM must then drain
// with no response left unsent.
//
//   node tests/e2e/serve_stress_test.mjs build/pagellm
import assert from "node:assert/strict";
import { makeTinyModel, runCases, startServer } from "./harness.mjs";

const [pagellm, filter] = process.argv.slice(2);
if (!pagellm) {
  console.error("usage: serve_stress_test.mjs PAGELLM_BINARY [case-filter]");
  process.exit(2);
}
const kBoundMs = 3000;
const kNumStreams = 12;
const kNumScrapes = 240;
const model = makeTinyModel(pagellm);
const server = await startServer(pagellm, model, ["--disable-log-stats"]);

// One streaming completion read to its end; resolves the number of SSE data events.
async function stream(i) {
  const res = await fetch(`${server.url}/v1/completions`, {
    method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tiny", prompt: `stream ${i} says`, max_tokens: 48, ignore_eos: true,
      temperature: 0, stream: true }),
    signal: AbortSignal.timeout(60000),
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.ok(text.endsWith("data: [DONE]\n\n"), `stream ${i} ended with ${JSON.stringify(text.slice(-40))}`);
  return text.split("\n\n").filter((e) => e.startsWith("data: {")).length;
}

const cases = [
  ["every GET answered within the bound while streams run", async () => {
    let running = true;
    let numStreamed = 0;
    const streamers = Array.from({ length: kNumStreams }, async (_, i) => {
      for (let k = 0; running; k++) {
        // Not `numStreamed += await ...`: that reads the counter before the await and loses updates.
        const numEvents = await stream(i * 1000 + k);
        if (numEvents > 0) numStreamed += 1;
      }
    });
    const paths = ["/metrics", "/health", "/version", "/v1/models"];
    const failures = [];
    let slowest = 0;
    for (let i = 0; i < kNumScrapes; i++) {
      const p = paths[i % paths.length];
      const t0 = Date.now();
      try {
        const res = await fetch(server.url + p, { signal: AbortSignal.timeout(kBoundMs) });
        await res.text();
        if (res.status !== 200) failures.push(`${p} #${i}: HTTP ${res.status}`);
      } catch (e) {
        failures.push(`${p} #${i}: ${e.name}`);
      }
      slowest = Math.max(slowest, Date.now() - t0);
    }
    running = false;
    await Promise.all(streamers);
    assert.deepEqual(failures, [], `${failures.length} of ${kNumScrapes} GETs unanswered within ${kBoundMs} ms`);
    assert.ok(numStreamed >= kNumStreams, `only ${numStreamed} streams completed`);
    console.log(`  ${kNumScrapes} GETs answered (slowest ${slowest} ms), ${numStreamed} streams completed`);
  }],
  ["SIGTERM drains with no response left unsent", async () => {
    const streams = Array.from({ length: 4 }, (_, i) => stream(9000 + i));
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    server.proc.kill("SIGTERM");
    const counts = await Promise.all(streams);
    const { code } = await server.exited;
    assert.equal(code, 0);
    assert.ok(counts.every((n) => n > 0));
    assert.doesNotMatch(server.log(), /responses still unsent/);
    console.log(`  drained in ${Date.now() - t0} ms`);
  }],
];

const failures = await runCases(cases, filter);
process.exit(failures ? 1 : 0);
