#!/usr/bin/env bash
# Interop test of the Gemma / PaliGemma blocks pi0 and pi05 are built from (host/nn/gemma_*,
# paligemma_*):
#
#   gemma_blocks_interop.sh CHECK_EXE WORK_DIR
#
# gemma_blocks_oracle.py (transformers 5.5 + LeRobot 0.6.1, the oracle venv) writes a tiny PaliGemma,
# an adaRMS action expert and reference outputs; CHECK_EXE (tests/interop/gemma_blocks_check.cpp)
# recomputes them with lrhost's modules. Exits 77 (ctest's skip code) when the oracle is unavailable.
# LRHOST_INTEROP_PYTHON overrides the python.
set -euo pipefail
check="${1:?usage: gemma_blocks_interop.sh CHECK_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

source "$here/oracle_python.sh"
require_oracle_python "transformers, lerobot.policies.pi_gemma, lerobot.policies.pi05.modeling_pi05"

rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
"$py" "$here/gemma_blocks_oracle.py" "$work"
# Twice: with PyTorch's own at::linear (bit-for-bit comparable to transformers) and with the default
# oneDNN reordered-weight CPU Linear path (host/nn/linear.hpp).
echo "== apply_linear through at::linear (LRHOST_CPU_PACKED_LINEAR=0)"
LRHOST_CPU_PACKED_LINEAR=0 "$check" "$work"
echo "== apply_linear with the default CPU reordered-weight path"
"$check" "$work"
