#!/usr/bin/env bash
# Full GGUF parity sweep (not part of CTest's default set): every preset x outtype with
# both prompts and the HF-directory check, including the slow qwen3-0.6b (~3 GB RAM, minutes).
#   tests/parity/run_all.sh [build/pagellm] [workdir]
set -u
PAGELLM=${1:-build/pagellm}
WORK=${2:-/tmp/pagellm-parity}
HERE=$(cd "$(dirname "$0")" && pwd)
status=0
for preset in qwen2-tiny qwen3-tiny qwen3-0.6b; do
  for case in "f16 1.0" "bf16 3.5" "q8_0 12.0"; do
    set -- $case
    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$HERE/gguf_parity.py" --pagellm "$PAGELLM" --workdir "$WORK" \
      --preset "$preset" --outtype "$1" --logprob-tol "$2" --hf-check || status=1
  done
done
exit $status
