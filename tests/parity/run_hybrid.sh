#!/usr/bin/env bash
# Hybrid GGUF parity sweep (not part of CTest's default set): qwen3.5-tiny, qwen3.5-moe-tiny,
# qwen3-next-tiny and the realistic qwen3.5-0.8b (~5 GB RAM, minutes) x f16/bf16/q8_0, both
# prompts, 64 greedy tokens (teacher-forced, see gguf_parity.py --num-valid-tokens), the
# HF-directory check on bf16 (MoE presets at --dtype bfloat16).
#   tests/parity/run_hybrid.sh [build/pagellm] [workdir] [presets...]
set -u
PAGELLM=${1:-build/pagellm}
WORK=${2:-/tmp/pagellm-parity-hybrid}
shift $(( $# < 2 ? $# : 2 ))
PRESETS=${*:-qwen3.5-tiny qwen3.5-moe-tiny qwen3-next-tiny qwen3.5-0.8b}
HERE=$(cd "$(dirname "$0")" && pwd)
status=0
for preset in $PRESETS; do
  for case in "f16 1.5" "bf16 4.0" "q8_0 2.0"; do
    set -- $case
    extra=(); dtype=auto
    if [ "$1" = bf16 ]; then
      extra=(--hf-check)
      case $preset in *moe*|*next*) dtype=bfloat16 ;; esac
    fi
    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$HERE/gguf_parity.py" --pagellm "$PAGELLM" --workdir "$WORK" \
      --preset "$preset" --outtype "$1" --logprob-tol "$2" --dtype "$dtype" --num-valid-tokens 151669 --kv-cache-mib 512 \
      "${extra[@]}" || status=1
  done
done
exit $status
