#!/usr/bin/env bash
# Tokenizer interop: `lrhost tokenize` against Hugging Face tokenizers and transformers' AutoTokenizer
# (tokenizer_interop.py trains the tokenizers offline and compares every string).
#
#   tokenizer_interop.sh LRHOST_EXE WORK_DIR [SCRIPT]
#
# SCRIPT: the Python side, default tokenizer_interop.py (byte-level BPE); tokenizer_gemma_interop.py checks the
# Gemma-style byte-fallback family, tokenizer_qwen2_interop.py Qwen2Tokenizer (NFC, Qwen2's pre-tokenizer).
#
# Exits 77 (ctest's skip code) when the interop oracle's Python is unavailable, 1 on any mismatch.
set -euo pipefail
lrhost="${1:?usage: tokenizer_interop.sh LRHOST_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/oracle_python.sh"
require_oracle_python "tokenizers, transformers"
export TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
exec "$py" "$here/${3:-tokenizer_interop.py}" "$lrhost" "$work"
