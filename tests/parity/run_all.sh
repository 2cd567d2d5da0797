#!/usr/bin/env bash
# Full GGUF parity sweep (not part of CTest's default set): every preset x outtype with
# both prompts and the HF-directory check, in llama.cpp's exact-attention config (flash
# attention off, F32 KV cache; see gguf_parity.py), including the slow qwen3-0.6b
# (~3 GB RAM, minutes). Tolerances as in src/gguf/CMakeLists.txt; f32 only for the tiny
# presets (a 2.4 GB file for qwen3-0.6b).
#   tests/parity/run_all.sh [build/pagellm] [workdir] [presets...]
set -u
PAGELLM=${1:-build/pagellm}
WORK=${2:-/tmp/pagellm-parity}
shift 2 2>/dev/null
PRESETS=${*:-qwen2-tiny qwen3-tiny qwen3-0.6b}
HERE=$(cd "$(dirname "$0")" && pwd)
status=0
for preset in $PRESETS; do
  for case in "f32 0.02" "f16 0.3" "bf16 1.3" "q8_0 3.5"; do
    set -- $case
    [ "$1" = f32 ] && [ "$preset" = qwen3-0.6b ] && continue
    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$HERE/gguf_parity.py" --pagellm "$PAGELLM" --workdir "$WORK" \
      --preset "$preset" --outtype "$1" --logprob-tol "$2" --hf-check --llama-cpp-config exact --kv-cache-mib 512 || status=1
  done
done
exit $status
