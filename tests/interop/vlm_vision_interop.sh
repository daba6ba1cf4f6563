#!/usr/bin/env bash
# VLM vision blocks against transformers 5.5 / LeRobot 0.6.1 (the oracle venv):
#
#   vlm_vision_interop.sh CHECK_EXE WORK_DIR
#
# vlm_vision_oracle.py writes a tiny SmolVLM (config, weights, inputs and reference outputs) to
# WORK_DIR; CHECK_EXE (lrhost_vlm_vision_check) loads it with lrhost's modules and compares. Exits 77
# (ctest's skip code) when the oracle's Python is not installed; LRHOST_INTEROP_PYTHON overrides it.
set -euo pipefail
check="${1:?usage: vlm_vision_interop.sh CHECK_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/oracle_python.sh"
require_oracle_python
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
"$py" "$here/vlm_vision_oracle.py" "$work"
# Twice: with PyTorch's own at::linear (bit-for-bit comparable to transformers) and with the default
# oneDNN reordered-weight CPU Linear path (host/nn/linear.hpp).
echo "== apply_linear through at::linear (LRHOST_CPU_PACKED_LINEAR=0)"
LRHOST_CPU_PACKED_LINEAR=0 "$check" "$work"
echo "== apply_linear with the default CPU reordered-weight path"
"$check" "$work"
