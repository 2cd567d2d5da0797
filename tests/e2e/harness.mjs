// Test harness for `pagellm serve` end-to-end tests: makes a tiny dummy model, starts
// the server on a free loopback port (--port 0, port read from the "ready on" log
// line), and always kills it (process exit, signals, failures). Node 20.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const sourceDir = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
export const refs = path.join(sourceDir, ".refs/node_modules");
export const importRef = (rel) => import(pathToFileURL(path.join(refs, rel)).href);

const children = new Set();
function killAll() {
  for (const c of children) {
    try { c.kill("SIGKILL"); } catch {}
  }
}
process.on("exit", killAll);
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => { killAll(); process.exit(1); });

export function makeTinyModel(pagellm, preset = "qwen3-tiny") {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pagellm-e2e-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const out = path.join(dir, "model");
  const r = spawnSync(pagellm, ["make-dummy-model", "--preset", preset, "--out", out], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`make-dummy-model failed: ${r.stderr}`);
  return out;
}

// Starts `pagellm serve MODEL ...args`; resolves {proc, port, url, log(), exited}.
export function startServer(pagellm, model, args = [], timeoutMs = 60000) {
  return startProcess(pagellm, ["serve", model, "--host", "127.0.0.1", "--port", "0", "--kv-cache-memory",
    String(64 << 20), "--max-model-len", "2048", "--served-model-name", "tiny", ...args], timeoutMs);
}

// Starts `pagellm ...args` (a server that logs "ready on http://HOST:PORT", or a line
// matching `readyPattern`); resolves {proc, port, url, log(), exited}. The process is
// killed when the test exits.
export function startProcess(pagellm, args, timeoutMs = 60000, readyPattern = /ready on http:\/\/[0-9.]+:(\d+)/) {
  const proc = spawn(pagellm, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, OMP_NUM_THREADS: "2" } });
  children.add(proc);
  let log = "";
  const exited = new Promise((resolve) => proc.on("exit", (code, signal) => { children.delete(proc); resolve({ code, signal }); }));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server not ready after ${timeoutMs} ms:\n${log}`)), timeoutMs);
    const onData = (d) => {
      log += d.toString();
      const m = log.match(readyPattern);
      if (m && timer) {
        clearTimeout(timer);
        const port = Number(m[1]);
        resolve({ proc, port, url: `http://127.0.0.1:${port}`, log: () => log, exited });
      }
    };
    proc.stdout.on("data", onData);
    proc.stderr.on("data", onData);
    exited.then(({ code }) => reject(new Error(`server exited (${code}) before ready:\n${log}`)));
  });
}

// Prometheus text -> {"name{labels}": value}, plus sum(name) helper.
export function parseMetrics(text) {
  const values = {};
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const i = line.lastIndexOf(" ");
    values[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return values;
}
export function metricValue(values, name) {
  let total = 0;
  for (const [k, v] of Object.entries(values)) if (k === name || k.startsWith(name + "{")) total += v;
  return total;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Runs named async cases in order; prints PASS/FAIL lines; returns the failure count.
export async function runCases(cases, filter) {
  let failures = 0;
  for (const [name, fn] of cases) {
    if (filter && !name.includes(filter)) continue;
    const t0 = Date.now();
    try {
      await fn();
      console.log(`PASS ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failures++;
      console.log(`FAIL ${name}: ${e.stack ?? e}`);
    }
  }
  return failures;
}
