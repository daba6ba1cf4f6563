#!/usr/bin/env bash
# Interop test of lrhost's Qwen3-VL vision tower (host/nn/qwen3_vl_vision, GR00T N1.7's image
# backbone) against transformers 5.5's Qwen3VLVisionModel:
#
#   qwen3_vision_interop.sh CHECK_EXE WORK_DIR
#
# qwen3_vision_oracle.py writes a tiny tower, two images and references; CHECK_EXE
# (tests/interop/qwen3_vision_check.cpp) recomputes them. Exits 77 (ctest's skip code) when the oracle
# is unavailable.
set -euo pipefail
check="${1:?usage: qwen3_vision_interop.sh CHECK_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/oracle_python.sh"
require_oracle_python "transformers.models.qwen3_vl.modeling_qwen3_vl"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
"$py" "$here/qwen3_vision_oracle.py" "$work"
"$check" "$work"
