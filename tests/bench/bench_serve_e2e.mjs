// End-to-end test of `pagellm bench serve` against tests/bench/fake_openai_server.mjs.
//
//   node bench_serve_e2e.mjs PAGELLM_BINARY TOKENIZER_DIR WORK_DIR
//
// The fake server is told how long to wait before the first token and between chunks,
// and which requests to fail; the benchmark's JSON must report those delays, the exact
// completed/failed counts and token totals, must respect --max-concurrency (as seen by
// the server), and its prompts must have exactly --random-input-len tokens according to
// Hugging Face tokenizers (an implementation independent of pagellm's).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { hfNative } from '../tokenizer/hf.mjs';

const [pagellm, tokenizerDir, workDir] = process.argv.slice(2);
fs.mkdirSync(workDir, { recursive: true });
const hf = hfNative.Tokenizer.fromFile(path.join(tokenizerDir, 'tokenizer.json'));
const hfCount = async (text) => (await hf.encode(text, null, { addSpecialTokens: false })).getIds().length;

let failures = 0;
function check(cond, what) {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures++;
}

async function startServer(flags) {
  const child = spawn('node', [path.join(path.dirname(new URL(import.meta.url).pathname), 'fake_openai_server.mjs'), ...flags],
                      { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise((resolve) => readline.createInterface({ input: child.stdout }).once('line', resolve));
  return { child, port: JSON.parse(line).port };
}

async function stats(port) {
  return (await fetch(`http://127.0.0.1:${port}/stats`)).json();
}

function bench(port, name, extra) {
  const args = ['bench', 'serve', '--base-url', `http://127.0.0.1:${port}`, '--model', 'fake', '--tokenizer', tokenizerDir,
                '--save-result', '--result-dir', workDir, '--result-filename', `${name}.json`, ...extra];
  const t0 = Date.now();
  const r = spawnSync(pagellm, args, { encoding: 'utf8', timeout: 60000 });
  console.log(`--- ${name}: exit ${r.status} in ${Date.now() - t0} ms\n${r.stdout}${r.stderr.split('\n').slice(0, 5).join('\n')}`);
  const file = path.join(workDir, `${name}.json`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, json: fs.existsSync(file) ? JSON.parse(fs.readFileSync(file)) : null };
}

// Completions, fixed concurrency, injected HTTP 500s and cut streams, goodput, all metrics.
async function scenarioCompletions() {
  const n = 40, inLen = 32, outLen = 8, ttft = 80, itl = 20, failEvery = 5, cutEvery = 7;
  const server = await startServer(['--ttft-ms', ttft, '--itl-ms', itl, '--fail-every', failEvery, '--cut-every', cutEvery].map(String));
  const r = bench(server.port, 'completions', ['--num-prompts', n, '--random-input-len', inLen, '--random-output-len', outLen,
    '--max-concurrency', 8, '--goodput', 'ttft:2000', 'tpot:500', '--percentile-metrics', 'ttft,tpot,itl,e2el',
    '--metric-percentiles', '50,99', '--save-detailed'].map(String));
  const s = await stats(server.port);
  server.child.kill();
  check(r.status === 0, 'completions: exit code 0');
  check(r.stdout.includes('============ Serving Benchmark Result ============'), 'completions: vLLM table header');
  const j = r.json;
  if (!j) return check(false, 'completions: result JSON written');
  // Sequence 1 is the ready check; the benchmark's requests are sequences 2..n+1.
  let expectFailed = 0;
  for (let seq = 2; seq <= n + 1; seq++) if (seq % failEvery === 0 || seq % cutEvery === 0) expectFailed++;
  check(j.completed === n - expectFailed && j.failed === expectFailed, `completed ${j.completed} / failed ${j.failed} (expected ${n - expectFailed} / ${expectFailed})`);
  check(j.total_output_tokens === j.completed * outLen, `total_output_tokens ${j.total_output_tokens} == ${j.completed} * ${outLen}`);
  check(j.total_input_tokens === j.completed * inLen, `total_input_tokens ${j.total_input_tokens} == ${j.completed} * ${inLen}`);
  check(j.mean_ttft_ms >= ttft && j.mean_ttft_ms < ttft + 250, `mean TTFT ${j.mean_ttft_ms.toFixed(1)} ms ~ ${ttft} ms`);
  check(j.median_tpot_ms >= 0.75 * itl && j.median_tpot_ms < itl + 40, `median TPOT ${j.median_tpot_ms.toFixed(1)} ms ~ ${itl} ms`);
  check(j.median_itl_ms >= 0.75 * itl && j.median_itl_ms < itl + 40, `median ITL ${j.median_itl_ms.toFixed(1)} ms ~ ${itl} ms`);
  const e2el = ttft + (outLen - 1) * itl;
  check(j.median_e2el_ms >= e2el && j.median_e2el_ms < e2el + 300, `median E2EL ${j.median_e2el_ms.toFixed(1)} ms ~ ${e2el} ms`);
  check(j.p99_ttft_ms >= j.median_ttft_ms && 'p50_itl_ms' in j && 'std_e2el_ms' in j, 'percentile keys');
  check(j.request_goodput > 0 && j.request_goodput <= j.request_throughput + 1e-9, `goodput ${j.request_goodput}`);
  check(j.max_concurrency === 8 && s.max_in_flight <= 8 && s.max_in_flight >= 6, `server saw at most ${s.max_in_flight} in flight (cap 8)`);
  check(j.ttfts.length === n && j.errors.filter((e) => e !== '').length === expectFailed, 'detailed arrays');
  const main = s.bodies.slice(1);
  check(main.every((b) => b.stream === true && b.stream_options?.include_usage === true && b.ignore_eos === true
                       && b.max_tokens === outLen && b.model === 'fake' && b.temperature === 0), 'request bodies (stream, usage, ignore_eos, max_tokens)');
  const counts = await Promise.all(main.map((b) => hfCount(b.prompt)));
  check(counts.every((c) => c === inLen), `HF tokenizers counts ${inLen} tokens in every prompt (${[...new Set(counts)]})`);
}

// Chat endpoint, no usage in the stream (tokenizer fallback), 300 requests at once.
async function scenarioManyChatStreams() {
  const n = 300, outLen = 4;
  const server = await startServer(['--ttft-ms', '400', '--itl-ms', '50', '--no-usage']);
  const r = bench(server.port, 'chat', ['--endpoint', '/v1/chat/completions', '--num-prompts', n, '--random-input-len', 8,
                                        '--random-output-len', outLen, '--ready-check-timeout-sec', 0].map(String));
  const s = await stats(server.port);
  server.child.kill();
  const j = r.json;
  if (!j) return check(false, 'chat: result JSON written');
  check(j.backend === 'openai-chat' && j.completed === n && j.failed === 0, `chat: ${j.completed} completed, ${j.failed} failed`);
  check(s.max_in_flight >= 250, `chat: server saw ${s.max_in_flight} concurrent streams`);
  const perRequest = await hfCount(' tok'.repeat(outLen));
  check(j.total_output_tokens === n * perRequest, `chat: tokenizer-counted output ${j.total_output_tokens} == ${n} * ${perRequest}`);
  check(s.bodies.every((b) => b.messages?.[0]?.role === 'user' && b.max_completion_tokens === outLen), 'chat: request bodies');
  check(j.mean_ttft_ms >= 400, `chat: TTFT ${j.mean_ttft_ms.toFixed(1)} ms counts from the first content, not the role chunk`);
}

// Poisson-ish arrivals at 10 req/s: the last request is sent at exactly n / rate.
async function scenarioRate() {
  const n = 15, rate = 10;
  const server = await startServer(['--ttft-ms', '10', '--itl-ms', '5']);
  const r = bench(server.port, 'rate', ['--num-prompts', n, '--request-rate', rate, '--burstiness', '0.5',
                                        '--random-input-len', 8, '--random-output-len', 4, '--seed', 3].map(String));
  server.child.kill();
  const j = r.json;
  if (!j) return check(false, 'rate: result JSON written');
  check(j.request_rate === rate && j.burstiness === 0.5 && j.completed === n, 'rate: settings recorded, all completed');
  check(j.duration >= n / rate && j.duration < n / rate + 1.5, `rate: duration ${j.duration.toFixed(2)} s ~ ${n / rate} s`);
  check(r.stdout.includes('Request rate configured (RPS):           10.00'), 'rate: table shows the configured rate');
}

async function scenarioShareGpt() {
  const convs = [
    ['What is the capital of France? Answer in one sentence please.', 'The capital of France is Paris, a city on the Seine.'],
    ['Write a haiku about key value caches and paged attention.', 'Blocks of memory / pages hold the keys we made / attention recalls'],
    ['x', 'too short to keep'],
  ];
  const file = path.join(workDir, 'sharegpt.json');
  fs.writeFileSync(file, JSON.stringify(convs.map(([q, a], i) => ({ id: `c${i}`, conversations: [{ from: 'human', value: q }, { from: 'gpt', value: a }] }))));
  const server = await startServer(['--ttft-ms', '5', '--itl-ms', '1']);
  const r = bench(server.port, 'sharegpt', ['--dataset-name', 'sharegpt', '--dataset-path', file, '--num-prompts', '2']);
  const s = await stats(server.port);
  server.child.kill();
  const j = r.json;
  if (!j) return check(false, 'sharegpt: result JSON written');
  const want = (await hfCount(convs[0][0])) + (await hfCount(convs[1][0]));
  check(j.completed === 2 && j.total_input_tokens === want, `sharegpt: input tokens ${j.total_input_tokens} == HF count ${want}`);
  const outs = await Promise.all(convs.slice(0, 2).map(([, a]) => hfCount(a)));
  const sent = s.bodies.slice(1).map((b) => b.max_tokens).sort();
  check(JSON.stringify(sent) === JSON.stringify(outs.sort()), `sharegpt: max_tokens ${sent} = answer lengths ${outs}`);
}

async function scenarioNoServer() {
  const { child, port } = await startServer([]);
  child.kill();
  await new Promise((res) => child.once('exit', res));
  const r = bench(port, 'noserver', ['--num-prompts', '2', '--random-input-len', '8', '--ready-check-timeout-sec', '1']);
  check(r.status !== 0 && /initial test run failed/.test(r.stderr), 'no server: clean error, non-zero exit');
}

await scenarioCompletions();
await scenarioManyChatStreams();
await scenarioRate();
await scenarioShareGpt();
await scenarioNoServer();
console.log(failures === 0 ? 'all checks passed' : `${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
