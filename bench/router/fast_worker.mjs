// A fast OpenAI-compatible upstream for measuring the router's own overhead: answers
// /v1/completions and /v1/chat/completions at once with one token (streaming or not),
// /v1/models, /health and a /metrics page with vLLM's gauges at zero. Not a model: the
// router bench uses it where the workers' speed must not be part of the figure.
//
//   node bench/router/fast_worker.mjs     # prints "ready on http://127.0.0.1:PORT"
import http from "node:http";

const completion = (chat) => JSON.stringify(chat
  ? { id: "chatcmpl-fast", object: "chat.completion", created: 0, model: "fast",
      choices: [{ index: 0, message: { role: "assistant", content: "x" }, finish_reason: "length" }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }
  : { id: "cmpl-fast", object: "text_completion", created: 0, model: "fast",
      choices: [{ index: 0, text: "x", logprobs: null, finish_reason: "length" }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
const chunk = (chat) => JSON.stringify(chat
  ? { id: "chatcmpl-fast", object: "chat.completion.chunk", created: 0, model: "fast",
      choices: [{ index: 0, delta: { role: "assistant", content: "x" }, finish_reason: "length" }] }
  : { id: "cmpl-fast", object: "text_completion", created: 0, model: "fast",
      choices: [{ index: 0, text: "x", logprobs: null, finish_reason: "length" }] });
const metrics = "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"fast\"} 0\n" +
  "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"fast\"} 0\n" +
  "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"fast\"} 0\n";

const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (d) => { body += d; });
  req.on("end", () => {
    const chat = req.url === "/v1/chat/completions";
    if (req.method === "POST" && (chat || req.url === "/v1/completions")) {
      let stream = false;
      try { stream = JSON.parse(body).stream === true; } catch {}
      if (!stream) return res.writeHead(200, { "content-type": "application/json" }).end(completion(chat));
      res.writeHead(200, { "content-type": "text/event-stream" });
      return res.end(`data: ${chunk(chat)}\n\ndata: [DONE]\n\n`);
    }
    if (req.url === "/v1/models") {
      return res.writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ object: "list", data: [{ id: "fast", object: "model", owned_by: "bench" }] }));
    }
    if (req.url === "/health") return res.writeHead(200).end();
    if (req.url === "/metrics") return res.writeHead(200, { "content-type": "text/plain" }).end(metrics);
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "not found" } }));
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, "127.0.0.1", () => console.log(`ready on http://127.0.0.1:${server.address().port}`));
