#!/usr/bin/env bash
# Interop test of lrhost's GR00T N1.7 action head (host/policy/groot) against LeRobot 0.6.1's:
#
#   groot_head_interop.sh CHECK_EXE WORK_DIR
#
# groot_head_oracle.py (LeRobot's GR00TN17ActionHead with diffusers, the oracle venv) writes a tiny
# head, inputs, the draws it made, its loss, gradients and sampled chunk; CHECK_EXE
# (tests/interop/groot_head_check.cpp) recomputes them. Exits 77 (ctest's skip code) when the oracle
# is unavailable.
set -euo pipefail
check="${1:?usage: groot_head_interop.sh CHECK_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/oracle_python.sh"
require_oracle_python "diffusers, lerobot.policies.groot.groot_n1_7"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
"$py" "$here/groot_head_oracle.py" "$work"
"$check" "$work"
