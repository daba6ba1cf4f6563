#!/usr/bin/env bash
# Interop test of lrhost's Qwen3-VL backbone as GR00T N1.7 runs it (host/nn/qwen3_vl_model: the vision
# tower, image tokens in the prompt, M-RoPE ids, the layer cut and the select-layer tap) against
# transformers 5.5's Qwen3VLModel:
#
#   qwen3_backbone_interop.sh CHECK_EXE WORK_DIR
#
# qwen3_backbone_oracle.py writes a tiny backbone, two prompts of two images and references; CHECK_EXE
# (tests/interop/qwen3_backbone_check.cpp) recomputes them. Exits 77 (ctest's skip code) when the oracle
# is unavailable.
set -euo pipefail
check="${1:?usage: qwen3_backbone_interop.sh CHECK_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/oracle_python.sh"
require_oracle_python "transformers.models.qwen3_vl.modeling_qwen3_vl"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
"$py" "$here/qwen3_backbone_oracle.py" "$work"
"$check" "$work"
