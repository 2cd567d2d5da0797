#!/usr/bin/env bash
# Sets up a fresh machine, unpacks pagellm's own small model (a Qwen3-architecture model
# trained here on Python's documentation: tools/small_model/), serves it with
# `pagellm serve` and asks it one question through the OpenAI chat API, then stops.
#   bash scripts/run-demo.sh ["your question"]
# Prints the request, the reply as it streams, and one line of timing.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "setup: installing packages and building (first run: ~15-25 min on 2 cores)"
bash scripts/setup.sh >/dev/null
source scripts/node-env.sh
ASSET=assets/models/pydoc-qwen3
MODEL=models/pydoc-qwen3
PORT=${PORT:-8000}
if [ ! -f "$MODEL/model.safetensors" ] || [ "$ASSET/compact.safetensors" -nt "$MODEL/model.safetensors" ]; then
  ./build/pagellm unpack-model "$ASSET" --out "$MODEL" >/dev/null
fi
./build/pagellm serve "$MODEL" --served-model-name pydoc-qwen3 --host 127.0.0.1 --port "$PORT" \
  --max-model-len 2048 --kv-cache-memory 1073741824 --reasoning-parser qwen3 2>build/demo-server.log &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  kill -0 $SERVER 2>/dev/null || { echo "server exited; its log:" >&2; tail -n 20 build/demo-server.log >&2; exit 1; }
  sleep 1
done
QUESTION=${1:-What does \`shutil.copyfile\` do?}
python3 - "$PORT" "$QUESTION" <<'EOF'
import json, sys, time, urllib.request
port, question = sys.argv[1], sys.argv[2]
body = {"model": "pydoc-qwen3", "messages": [{"role": "user", "content": question}],
        "max_tokens": 128, "seed": 0, "stream": True, "stream_options": {"include_usage": True}}
print("request: POST /v1/chat/completions " + json.dumps({k: v for k, v in body.items() if k != "stream_options"}))
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                             headers={"Content-Type": "application/json"})
start, first, usage = time.time(), None, None
print("reply: ", end="", flush=True)
with urllib.request.urlopen(req) as resp:
    for line in resp:
        line = line.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices", []):
            text = choice.get("delta", {}).get("content")
            if text and first is None:
                text = text.lstrip("\n")  # the blank line Qwen3 writes after its (empty) think block
            if text:
                first = first or time.time()
                print(text, end="", flush=True)
end = time.time()
n = usage["completion_tokens"] if usage else 0
ttft = (first or end) - start
rate = (n - 1) / (end - first) if first and n > 1 and end > first else 0.0
print(f"\ntiming: TTFT {ttft * 1000:.0f} ms, {n} tokens, {rate:.1f} tokens/s after the first, "
      f"{end - start:.2f} s in all")
EOF
