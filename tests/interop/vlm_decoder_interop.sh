#!/usr/bin/env bash
# Interop test of the Llama/SmolLM2 decoder parts (docs/vlm.md, "Decoder layer"):
#
#   vlm_decoder_interop.sh CHECK_EXE WORK_DIR
#
# vlm_decoder_oracle.py (transformers 5.5 + LeRobot 0.6.1, the oracle venv) writes tiny random Llama
# models and reference outputs; CHECK_EXE (tests/interop/vlm_decoder_check.cpp) recomputes them with
# lrhost's modules. Exits 77 (ctest's skip code) when the oracle's python is unavailable.
# LRHOST_INTEROP_PYTHON overrides the python (for development before the oracle is installed).
set -euo pipefail
check="${1:?usage: vlm_decoder_interop.sh CHECK_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

source "$here/oracle_python.sh"
require_oracle_python "transformers, lerobot.policies.smolvla.smolvlm_with_expert"

rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
"$py" "$here/vlm_decoder_oracle.py" "$work"
# Twice: with PyTorch's own at::linear (bit-for-bit comparable to transformers) and with the default
# oneDNN reordered-weight CPU Linear path (host/nn/linear.hpp).
echo "== apply_linear through at::linear (LRHOST_CPU_PACKED_LINEAR=0)"
LRHOST_CPU_PACKED_LINEAR=0 "$check" "$work/plain" "$work/bias"
echo "== apply_linear with the default CPU reordered-weight path"
"$check" "$work/plain" "$work/bias"
