#!/usr/bin/env bash
# Interop test of lrhost's GR00T N1.7 network (host/policy/groot/groot_model: the Qwen3-VL backbone
# and the action head) against LeRobot 0.6.1's own GrootPolicy:
#
#   groot_policy_interop.sh CHECK_EXE WORK_DIR
#
# groot_oracle.py builds a tiny GrootPolicy offline with LeRobot's code (one monkeypatch of the
# hard-coded backbone geometry; dm-tree is pinned in the oracle venv) and writes its saved folder, the
# processed batch, the draws, the loss, gradients and chunk; CHECK_EXE (tests/interop/
# groot_policy_check.cpp) recomputes them. Exits 77 (ctest's skip code) when the oracle is unavailable.
set -euo pipefail
check="${1:?usage: groot_policy_interop.sh CHECK_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/oracle_python.sh"
require_oracle_python "tree, lerobot.policies.groot.modeling_groot"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
"$py" "$here/groot_oracle.py" "$work/oracle"
"$check" "$work/oracle"
