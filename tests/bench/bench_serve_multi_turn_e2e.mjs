// End-to-end: `pagellm bench serve --dataset-name multi-turn` against a real `pagellm serve`
// running the tiny hybrid Qwen3.5 preset, once with prefix caching on and once off.
//
//   node bench_serve_multi_turn_e2e.mjs PAGELLM_BINARY WORK_DIR
//
// With caching on, every turn after the first must be served partly from the cache (its
// history was computed by the previous turn) and the first turn must not be (the user
// messages are unique); the server's /metrics hit counter over the run must equal the
// sum of the cached_tokens the responses reported, two independent counts. With caching
// off nothing may be cached.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startPagellmServe } from './serve_process.mjs';

const [pagellm, workDir] = process.argv.slice(2);
fs.mkdirSync(workDir, { recursive: true });
const modelDir = path.join(workDir, 'qwen3.5-tiny');
let failures = 0;
function check(cond, what) {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures++;
}

const made = spawnSync(pagellm, ['make-dummy-model', '--preset', 'qwen3.5-tiny', '--out', modelDir], { encoding: 'utf8' });
if (made.status !== 0) throw new Error(`make-dummy-model failed: ${made.stderr}`);

const startServer = (cachingFlag) => startPagellmServe(pagellm, modelDir, ['--max-num-seqs', '4', cachingFlag]);

const conversations = 2, turns = 3, inLen = 80, outLen = 8;
function bench(name, port) {
  const args = ['bench', 'serve', '--port', String(port), '--model', modelDir, '--dataset-name', 'multi-turn',
                '--multi-turn-num-conversations', String(conversations), '--multi-turn-turns', String(turns),
                '--multi-turn-input-len', String(inLen), '--multi-turn-output-len', String(outLen),
                '--max-concurrency', '2', '--save-result', '--result-dir', workDir, '--result-filename', `${name}.json`];
  const r = spawnSync(pagellm, args, { encoding: 'utf8', timeout: 90000 });
  console.log(`--- ${name}: exit ${r.status}\n${r.stdout}${r.stderr.split('\n').slice(0, 5).join('\n')}`);
  const file = path.join(workDir, `${name}.json`);
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file)) : null;
}

function checkCommon(name, j) {
  check(j && j.completed === conversations * turns && j.failed === 0, `${name}: ${j?.completed} completed, ${j?.failed} failed`);
  check(j && j.total_output_tokens === conversations * turns * outLen, `${name}: ${j?.total_output_tokens} output tokens`);
  const perTurn = j?.multi_turn?.per_turn ?? [];
  check(perTurn.length === turns, `${name}: ${perTurn.length} per-turn rows`);
  // Each turn resends the history, so prompts grow by at least the new user message and the reply.
  for (let t = 1; t < perTurn.length; t++)
    check(perTurn[t].prompt_tokens >= perTurn[t - 1].prompt_tokens + conversations * (inLen + outLen),
          `${name}: turn ${t + 1} prompts (${perTurn[t].prompt_tokens}) hold turn ${t}'s (${perTurn[t - 1].prompt_tokens})`);
  return perTurn;
}

for (const [name, flag] of [['caching-on', '--enable-prefix-caching'], ['caching-off', '--no-enable-prefix-caching']]) {
  const { server, port } = await startServer(flag);
  try {
    const j = bench(name, port);
    const perTurn = checkCommon(name, j);
    const cache = j?.server_prefix_cache ?? {};
    const cachedSum = perTurn.reduce((s, t) => s + (t.cached_tokens ?? 0), 0);
    const promptSum = perTurn.reduce((s, t) => s + t.prompt_tokens, 0);
    if (name === 'caching-on') {
      check(perTurn[0]?.cached_tokens === 0, `on: turn 1 cached ${perTurn[0]?.cached_tokens} == 0`);
      for (let t = 1; t < perTurn.length; t++)
        check(perTurn[t].cached_tokens >= conversations * 16,
              `on: turn ${t + 1} cached ${perTurn[t].cached_tokens} >= one block per conversation`);
      check(cache.hits === cachedSum && cache.hits > 0, `on: /metrics hits ${cache.hits} == usage cached ${cachedSum}`);
      check(cache.queries === promptSum, `on: /metrics queries ${cache.queries} == prompt tokens ${promptSum}`);
      check(cache.hit_rate > 0 && cache.hit_rate < 1, `on: hit rate ${cache.hit_rate}`);
    } else {
      check(perTurn.every((t) => t.cached_tokens === 0), 'off: no turn cached');
      check(cache.hits === 0, `off: /metrics hits ${cache.hits} == 0`);
    }
  } finally {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
  }
}
console.log(failures === 0 ? 'all checks passed' : `${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
