#!/usr/bin/env bash
# Full GGUF parity sweep (not part of CTest's default set): every preset x outtype with
# both prompts and the HF-directory check, in llama.cpp's exact-attention config (flash
# attention off, F32 KV cache; see gguf_parity.py), including the slow qwen3-0.6b
# (~3 GB RAM, minutes). Tolerances as in src/gguf/CMakeLists.txt for the tiny presets; f32
# only for them (a 2.4 GB file for qwen3-0.6b). qwen3-0.6b's 28 random layers amplify the
# rounding-step flips more (measured 2026-11-30, chat / random prompt, greedy identical
# everywhere): F16 0.171 / 0.353, BF16 1.195 / 2.115, Q8_0 3.050 / 7.712 (HF bf16 dir vs
# Q8_0 GGUF 9.0 / 16.2), so its tolerances are ~2x those.
#   tests/parity/run_all.sh [build/pagellm] [workdir] [presets...]
set -u
PAGELLM=${1:-build/pagellm}
WORK=${2:-/tmp/pagellm-parity}
if [ $# -ge 2 ]; then shift 2; else set --; fi
PRESETS=${*:-qwen2-tiny qwen3-tiny qwen3-0.6b}
HERE=$(cd "$(dirname "$0")" && pwd)
status=0
for preset in $PRESETS; do
  cases=("f32 0.02" "f16 0.3" "bf16 1.3" "q8_0 3.5")
  [ "$preset" = qwen3-0.6b ] && cases=("f16 0.7" "bf16 4.2" "q8_0 20")
  for case in "${cases[@]}"; do
    set -- $case
    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$HERE/gguf_parity.py" --pagellm "$PAGELLM" --workdir "$WORK" \
      --preset "$preset" --outtype "$1" --logprob-tol "$2" --hf-check --llama-cpp-config exact --kv-cache-mib 512 || status=1
  done
done
exit $status
