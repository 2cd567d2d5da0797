#!/usr/bin/env bash
# Reproduces pagellm's small model (assets/models/pydoc-qwen3) from Debian's Python
# documentation: corpus -> Qwen3 token ids -> training (CPU, Debian's python3-torch) ->
# compact checkpoint. Resumable: run it again after an interruption and training
# continues from WORK/checkpoint.pt.
#   bash tools/small_model/train.sh [WORK_DIR]     (default /var/tmp/pagellm-small-model)
# ~75 min on 2 idle cores (AMD EPYC Zen 3; 119 min when shared with other jobs) for the
# default 800 + 1,000 steps of 8 x 256 tokens (train.py: phase 1 on all text, phase 2 on chats).
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK=${1:-/var/tmp/pagellm-small-model}
dpkg-query -W -f='${Status}' python3.11-doc 2>/dev/null | grep -q "install ok installed" || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3.11-doc
}
bash scripts/install-refs.sh
mkdir -p "$WORK"
/usr/bin/python3 tools/small_model/build_corpus.py "$WORK/corpus"
node tools/small_model/tokenize_corpus.mjs "$WORK/corpus"
/usr/bin/python3 tools/small_model/train.py --corpus "$WORK/corpus" --work "$WORK/train" \
  --out assets/models/pydoc-qwen3
