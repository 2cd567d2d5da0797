#!/usr/bin/env bash
# Sets up a fresh machine, makes the default model, starts `pagellm serve` and answers
# one chat request through the OpenAI API, then stops the server.
# No weights can be downloaded here, so the default model is a random-weight
# checkpoint with the real Qwen3-0.6B shapes and the real Qwen3 tokenizer
# (its replies are fluent-looking noise; the machinery is the real one).
#   bash scripts/run-demo.sh ["your question"]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
MODEL=models/qwen3-0.6b-dummy
PORT=${PORT:-8000}
if [ ! -f "$MODEL/config.json" ]; then
  ./build/pagellm make-dummy-model --preset qwen3-0.6b --out "$MODEL"
fi
./build/pagellm serve "$MODEL" --served-model-name qwen3-0.6b --host 127.0.0.1 --port "$PORT" \
  --kv-cache-memory 2147483648 --max-model-len 8192 &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  kill -0 $SERVER 2>/dev/null || { echo "server exited" >&2; exit 1; }
  sleep 1
done
QUESTION=${1:-Give me a short introduction to large language models.}
BODY=$(python3 -c 'import json,sys; print(json.dumps({"model": "qwen3-0.6b", "max_tokens": 48,
  "messages": [{"role": "user", "content": sys.argv[1]}]}))' "$QUESTION")
echo "POST /v1/chat/completions: $QUESTION"
curl -sf "http://127.0.0.1:$PORT/v1/chat/completions" -H 'Content-Type: application/json' -d "$BODY" \
  | python3 -m json.tool --no-ensure-ascii
