#!/usr/bin/env bash
# Sets up a fresh machine, makes the default model and answers a chat message.
# No weights can be downloaded here, so the default model is a random-weight
# checkpoint with the real Qwen3-0.6B shapes and the real Qwen3 tokenizer
# (its replies are fluent-looking noise; the machinery is the real one).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
MODEL=models/qwen3-0.6b-dummy
if [ ! -f "$MODEL/config.json" ]; then
  ./build/pagellm make-dummy-model --preset qwen3-0.6b --out "$MODEL"
fi
./build/pagellm generate --model "$MODEL" --chat --max-tokens 32 \
  --prompt "${1:-Give me a short introduction to large language models.}"
