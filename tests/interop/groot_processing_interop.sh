#!/usr/bin/env bash
# Interop test of lrhost's GR00T N1.7 processor math (host/policy/groot/groot_pack, groot_images)
# against LeRobot 0.6.1's own processor steps and transformers 5.5.4's Qwen2VLImageProcessor:
#
#   groot_processing_interop.sh CHECK_EXE WORK_DIR
#
# groot_processing_oracle.py runs LeRobot's GrootN17PackInputsStep, GrootN17VLMEncodeStep's image
# transform, Qwen2VLImageProcessor and GrootActionUnpackUnnormalizeStep on crafted inputs (no model, no
# Hub); CHECK_EXE (tests/interop/groot_processing_check.cpp) recomputes every output. Exits 77 (ctest's
# skip code) when the oracle is unavailable.
set -euo pipefail
check="${1:?usage: groot_processing_interop.sh CHECK_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/oracle_python.sh"
require_oracle_python "transformers, lerobot.policies.groot.processor_groot"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
"$py" "$here/groot_processing_oracle.py" "$work/oracle"
"$check" "$work/oracle"
