#!/usr/bin/env bash
# Multi-turn serving benchmark of the hybrid qwen3.5-0.8b (prefix caching on vs off) and the
# decode tokens/s of qwen3.5-0.8b next to the dense qwen3-0.6b, on random-weight dummy
# checkpoints with the real shapes.
#
#   bench/serve/multi_turn.sh [BUILD_DIR]          # default build/; results in BUILD_DIR/multi_turn_bench
#   CONVERSATIONS=2 TURNS=3 bench/serve/multi_turn.sh build   # a shorter run
#   SKIP_SERVE=1 bench/serve/multi_turn.sh build                # only the decode comparison
#   SERVE_FLAGS="--hybrid-state-snapshots 64" ...                # extra `pagellm serve` flags
#
# 1. `pagellm serve qwen3.5-0.8b` with --enable-prefix-caching, then --no-enable-prefix-caching;
#    each time `pagellm bench serve --dataset-name multi-turn` (turn k resends the whole
#    conversation: every earlier user message, the actual replies, a new user message) and
#    prints per-turn TTFT and cached share plus the server's prefix-cache hit rate.
# 2. `pagellm bench throughput`, back to back for both models, twice: 1 sequence decoding
#    128 tokens, and 16 sequences x 64 tokens (16-token prompts), output tokens/s. The KV
#    budget (1 GiB) holds all 16 GDN state slots of the hybrid model (19 MiB each), so
#    both models run the 16 sequences in one batch (check "state slots" in the .log).
# The machine's load average is printed before each step: figures from a loaded machine are
# only comparable within one run.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
pagellm=$build/pagellm
work=${WORK:-$build/multi_turn_bench}
conversations=${CONVERSATIONS:-4}
turns=${TURNS:-4}
input_len=${INPUT_LEN:-256}
output_len=${OUTPUT_LEN:-32}
concurrency=${CONCURRENCY:-4}
max_num_seqs=${MAX_NUM_SEQS:-8}
extra_serve_flags=${SERVE_FLAGS:-}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
mkdir -p "$work"

load() { echo "[load average $(cut -d' ' -f1-3 /proc/loadavg)] $*"; }

model_dir() {  # preset -> checkpoint directory, made once
  local dir=$work/models/$1
  [ -f "$dir/config.json" ] || "$pagellm" make-dummy-model --preset "$1" --out "$dir" >/dev/null
  echo "$dir"
}

hybrid=$(model_dir qwen3.5-0.8b)
dense=$(model_dir qwen3-0.6b)

serve_and_bench() {  # name caching-flag
  local name=$1 flag=$2 log=$work/serve-$1.log port=""
  # shellcheck disable=SC2086
  "$pagellm" serve "$hybrid" --host 127.0.0.1 --port 0 --max-num-seqs "$max_num_seqs" --max-model-len 8192 \
      --kv-cache-memory $((1 << 30)) "$flag" $extra_serve_flags >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do
    port=$(grep -so 'ready on http://127.0.0.1:[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.5
  done
  [ -n "$port" ] || { echo "server did not come up"; kill "$pid"; exit 1; }
  load "multi-turn, $name: $conversations conversations x $turns turns, $input_len new tokens/turn, $output_len out"
  "$pagellm" bench serve --port "$port" --model "$hybrid" --dataset-name multi-turn \
      --multi-turn-num-conversations "$conversations" --multi-turn-turns "$turns" \
      --multi-turn-input-len "$input_len" --multi-turn-output-len "$output_len" --max-concurrency "$concurrency" \
      --save-result --result-dir "$work" --result-filename "multi-turn-$name.json" || { kill "$pid"; exit 1; }
  kill -TERM "$pid"
  wait "$pid" || true
}

if [ -z "${SKIP_SERVE:-}" ]; then
  serve_and_bench caching-on --enable-prefix-caching
  serve_and_bench caching-off --no-enable-prefix-caching
fi

throughput() {  # label model num_prompts output_len
  local out=$work/throughput-$1.json
  load "bench throughput $1"
  "$pagellm" bench throughput --model "$2" --num-prompts "$3" --input-len 16 --output-len "$4" --seed 0 \
      --max-model-len 256 --kv-cache-memory $((1 << 30)) --max-num-seqs 16 --output-json "$out" >"$out.log" 2>&1
  /usr/bin/python3 -c "import json,sys; r=json.load(open('$out')); print(f\"  $1: {$3 * $4 / r['elapsed_time']:.2f} output tok/s ({$3} x {$4} tokens in {r['elapsed_time']:.2f} s)\")"
}

for round in 1 2; do
  throughput "qwen3.5-0.8b-1x128-r$round" "$hybrid" 1 128
  throughput "qwen3-0.6b-1x128-r$round" "$dense" 1 128
  throughput "qwen3.5-0.8b-16x64-r$round" "$hybrid" 16 64
  throughput "qwen3-0.6b-16x64-r$round" "$dense" 16 64
done
load "done; results in $work"
