// Starts `pagellm serve MODEL` on loopback with a random port for the bench e2e tests;
// resolves { server, port } once it logs "ready on http://127.0.0.1:PORT".
//
//   const { server, port } = await startPagellmServe(pagellm, modelDir, ['--max-num-seqs', '4']);
import { spawn } from 'node:child_process';
import readline from 'node:readline';

export async function startPagellmServe(pagellm, modelDir, extra) {
  const server = spawn(pagellm, ['serve', modelDir, '--host', '127.0.0.1', '--port', '0', '--kv-cache-memory', String(64 << 20),
                                 '--max-model-len', '2048', '--disable-log-stats', ...extra],
                       { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, OMP_WAIT_POLICY: 'PASSIVE', OMP_NUM_THREADS: '2' } });
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('pagellm serve did not come up in 60 s')), 60000);
    for (const stream of [server.stdout, server.stderr]) {
      readline.createInterface({ input: stream }).on('line', (line) => {
        const m = line.match(/ready on http:\/\/127\.0\.0\.1:(\d+)/);
        if (m) { clearTimeout(timer); resolve(Number(m[1])); }
      });
    }
    server.once('exit', (code) => reject(new Error(`pagellm serve exited with ${code}`)));
  });
  return { server, port };
}
