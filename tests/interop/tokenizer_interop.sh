#!/usr/bin/env bash
# Tokenizer interop: `lrhost tokenize` against Hugging Face tokenizers and transformers' AutoTokenizer
# (tokenizer_interop.py trains the tokenizers offline and compares every string).
#
#   tokenizer_interop.sh LRHOST_EXE WORK_DIR [SCRIPT]
#
# SCRIPT: the Python side, default tokenizer_interop.py (byte-level BPE); tokenizer_gemma_interop.py checks the
# Gemma-style byte-fallback family.
#
# Exits 77 (ctest's skip code) when the interop oracle's Python is unavailable, 1 on any mismatch.
set -euo pipefail
lrhost="${1:?usage: tokenizer_interop.sh LRHOST_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
if ! py="$("$repo/scripts/setup-interop" --python 2>/dev/null)"; then
  echo "interop oracle unavailable (scripts/setup-interop --python failed); skipping"
  exit 77
fi
if ! "$py" -c 'import tokenizers, transformers' 2>/dev/null; then
  echo "the oracle python $py lacks tokenizers/transformers; skipping"
  exit 77
fi
export TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
exec "$py" "$here/${3:-tokenizer_interop.py}" "$lrhost" "$work"
