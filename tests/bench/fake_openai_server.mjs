// A vLLM-shaped fake OpenAI server for testing `pagellm bench serve` without a model.
//
//   node fake_openai_server.mjs [--ttft-ms 80] [--itl-ms 20] [--tokens-per-chunk 1]
//                               [--fail-every 0] [--cut-every 0] [--no-usage]
//
// Listens on 127.0.0.1 at an ephemeral port and prints {"port": N} as its first stdout
// line. POST /v1/completions and /v1/chat/completions stream max_tokens (or
// max_completion_tokens) tokens as SSE chunks like vLLM's: the first content chunk after
// --ttft-ms, then one chunk of --tokens-per-chunk tokens every --itl-ms, a finish chunk,
// a usage chunk (stream_options.include_usage), then [DONE]. Faults, counted over the
// arrival order of POSTs: every --fail-every-th request gets HTTP 500, every
// --cut-every-th has its connection destroyed after the first chunk. GET /stats returns
// {"requests", "max_in_flight", "bodies": [...]} so a test can check what was sent.
import http from 'node:http';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const ttftMs = opt('ttft-ms', 80);
const itlMs = opt('itl-ms', 20);
const tokensPerChunk = opt('tokens-per-chunk', 1);
const failEvery = opt('fail-every', 0);
const cutEvery = opt('cut-every', 0);
const sendUsage = !args.includes('--no-usage');

let numRequests = 0;
let inFlight = 0;
let maxInFlight = 0;
const bodies = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function chunk(isChat, id, text, finish) {
  const choice = isChat
    ? { index: 0, delta: text === null ? {} : { content: text }, finish_reason: finish }
    : { index: 0, text: text ?? '', finish_reason: finish };
  return {
    id, object: isChat ? 'chat.completion.chunk' : 'text_completion', created: 0, model: 'fake',
    choices: [choice],
  };
}

async function stream(req, res, body, seq) {
  const isChat = req.url.endsWith('/chat/completions');
  const maxTokens = body.max_tokens ?? body.max_completion_tokens ?? 16;
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  const send = (obj) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
  const id = `cmpl-${seq}`;
  if (isChat) send({ ...chunk(true, id, '', null), choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] });
  await sleep(ttftMs);
  let produced = 0;
  while (produced < maxTokens) {
    const n = Math.min(tokensPerChunk, maxTokens - produced);
    send(chunk(isChat, id, ' tok'.repeat(n), null));
    produced += n;
    if (cutEvery > 0 && seq % cutEvery === 0) {
      await sleep(itlMs);  // let the first chunk reach the client: the cut is mid-stream
      res.socket.destroy();
      return;
    }
    if (produced < maxTokens) await sleep(itlMs);
  }
  send(chunk(isChat, id, isChat ? null : '', 'length'));
  if (sendUsage && body.stream_options?.include_usage) {
    send({ id, object: isChat ? 'chat.completion.chunk' : 'text_completion', created: 0, model: 'fake', choices: [],
           usage: { prompt_tokens: 1, completion_tokens: produced, total_tokens: produced + 1 } });
  }
  res.write('data: [DONE]\n\n');
  res.end();
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ requests: numRequests, max_in_flight: maxInFlight, bodies }));
    return;
  }
  if (req.method !== 'POST' || !req.url.endsWith('completions')) {
    res.writeHead(404).end();
    return;
  }
  let raw = '';
  req.on('data', (d) => { raw += d; });
  req.on('end', async () => {
    const seq = ++numRequests;
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const done = () => { inFlight--; };
    res.on('close', done);
    let body;
    try {
      body = JSON.parse(raw);
    } catch {
      res.writeHead(400).end('bad json');
      return;
    }
    bodies.push(body);
    if (failEvery > 0 && seq % failEvery === 0) {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'injected failure', code: 500 } }));
      return;
    }
    stream(req, res, body, seq).catch(() => res.destroy());
  });
});
server.keepAliveTimeout = 1000;
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
