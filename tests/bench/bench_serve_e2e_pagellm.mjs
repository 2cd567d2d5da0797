// End-to-end: `pagellm bench serve` against a real `pagellm serve` running a tiny dummy
// Qwen3 model on loopback (completions and chat endpoints).
//
//   node bench_serve_e2e_pagellm.mjs PAGELLM_BINARY WORK_DIR
//
// With ignore_eos the server must generate exactly max_tokens per request, so the token
// totals are known in advance; they come from the server's usage chunks.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startPagellmServe } from './serve_process.mjs';

const [pagellm, workDir] = process.argv.slice(2);
fs.mkdirSync(workDir, { recursive: true });
const modelDir = path.join(workDir, 'qwen3-tiny');
let failures = 0;
function check(cond, what) {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures++;
}

const made = spawnSync(pagellm, ['make-dummy-model', '--preset', 'qwen3-tiny', '--out', modelDir], { encoding: 'utf8' });
if (made.status !== 0) throw new Error(`make-dummy-model failed: ${made.stderr}`);

let { server, port } = await startPagellmServe(pagellm, modelDir, []);

function bench(name, extra) {
  const args = ['bench', 'serve', '--port', String(port), '--model', modelDir, '--save-result', '--save-detailed',
                '--result-dir', workDir, '--result-filename', `${name}.json`, ...extra];
  const r = spawnSync(pagellm, args, { encoding: 'utf8', timeout: 90000 });
  console.log(`--- ${name}: exit ${r.status}\n${r.stdout}${r.stderr.split('\n').slice(0, 5).join('\n')}`);
  const file = path.join(workDir, `${name}.json`);
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file)) : null;
}

try {
  const n = 24, inLen = 64, outLen = 16;
  const c = bench('pagellm-completions', ['--num-prompts', n, '--random-input-len', inLen, '--random-output-len', outLen,
                                          '--max-concurrency', 8, '--percentile-metrics', 'ttft,tpot,itl,e2el'].map(String));
  check(c && c.completed === n && c.failed === 0, `completions: ${c?.completed} completed, ${c?.failed} failed`);
  check(c && c.total_output_tokens === n * outLen, `completions: ${c?.total_output_tokens} output tokens == ${n} * ${outLen}`);
  check(c && c.total_input_tokens === n * inLen, `completions: ${c?.total_input_tokens} input tokens == ${n} * ${inLen}`);
  check(c && c.mean_ttft_ms > 0 && c.mean_tpot_ms > 0 && c.mean_e2el_ms > c.mean_ttft_ms, 'completions: latencies measured');
  check(c && c.itls.every((gaps) => gaps.length >= 1 && gaps.length <= outLen - 1), 'completions: one ITL per content chunk');

  const h = bench('pagellm-chat', ['--endpoint', '/v1/chat/completions', '--num-prompts', 8, '--random-input-len', 32,
                                   '--random-output-len', 8, '--request-rate', 20].map(String));
  check(h && h.backend === 'openai-chat' && h.completed === 8 && h.failed === 0, `chat: ${h?.completed} completed, ${h?.failed} failed`);
  check(h && h.total_output_tokens === 8 * 8, `chat: ${h?.total_output_tokens} output tokens == 64`);
  check(c && h && c.spec_decode_num_drafts === undefined, 'no speculative-decoding figures without drafts');

  // Against a server with n-gram speculation: the run's drafts and acceptance from the
  // server's vllm:spec_decode_* counters (deltas over the run, as vLLM's bench prints).
  server.kill('SIGTERM');
  ({ server, port } = await startPagellmServe(pagellm, modelDir, ['--speculative-config', JSON.stringify({
    method: 'ngram', num_speculative_tokens: 3, prompt_lookup_min: 1, prompt_lookup_max: 2, disable_by_batch_size: 64 })]));
  const before = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const s = bench('pagellm-spec', ['--num-prompts', 8, '--random-input-len', 32, '--random-output-len', 32,
                                   '--max-concurrency', 4, '--num-warmups', 0, '--ready-check-timeout-sec', 0].map(String));
  const after = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const counter = (text, name) => text.split('\n').filter((l) => l.startsWith(`vllm:spec_decode_${name}_total`))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  check(s && s.completed === 8 && s.total_output_tokens === 8 * 32, `spec: ${s?.completed} completed, ${s?.total_output_tokens} tokens`);
  const drafts = counter(after, 'num_drafts') - counter(before, 'num_drafts');
  const accepted = counter(after, 'num_accepted_tokens') - counter(before, 'num_accepted_tokens');
  check(s && drafts > 0 && s.spec_decode_num_drafts === drafts, `spec: ${s?.spec_decode_num_drafts} drafts reported, ${drafts} counted`);
  check(s && s.spec_decode_accepted_tokens === accepted &&
        Math.abs(s.spec_decode_acceptance_length - (1 + accepted / drafts)) < 1e-9,
        `spec: acceptance length ${s?.spec_decode_acceptance_length} == 1 + ${accepted} / ${drafts}`);
  check(s && s.spec_decode_per_position_acceptance_rate.length === 3, 'spec: three per-position rates');
} finally {
  server.kill('SIGTERM');
}
console.log(failures === 0 ? 'all checks passed' : `${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
