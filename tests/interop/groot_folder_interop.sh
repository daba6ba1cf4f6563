#!/usr/bin/env bash
# Interop test of lrhost's `groot` policy (processors, folder, loss, gradients, chunk) against LeRobot
# 0.6.1's GrootPolicy, both ways:
#
#   groot_folder_interop.sh CHECK_EXE WORK_DIR
#
# groot_oracle.py builds and saves a tiny GrootPolicy with LeRobot's code; CHECK_EXE
# (tests/interop/groot_folder_check.cpp) loads that folder, preprocesses the raw batch, compares
# everything and saves lrhost's folder; groot_reload_oracle.py then loads lrhost's folder with LeRobot's
# GrootPolicy.from_pretrained and its processors and checks LeRobot computes the same.
# Exits 77 (ctest's skip code) when the oracle is unavailable.
set -euo pipefail
check="${1:?usage: groot_folder_interop.sh CHECK_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/oracle_python.sh"
require_oracle_python "tree, lerobot.policies.groot.modeling_groot"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
"$py" "$here/groot_oracle.py" "$work/oracle" --tune-llm-visual
HF_HUB_CACHE="$work/oracle/hf_cache" HF_HUB_OFFLINE=1 "$check" "$work/oracle"
"$py" "$here/groot_reload_oracle.py" "$work/oracle"
