#!/usr/bin/env bash
# Interop test of lrhost's `groot` processors on a base checkpoint that carries its own statistics
# (statistics.json[tag] + processor_config.json modality_configs[tag]) against LeRobot 0.6.1, both ways:
#
#   groot_stats_pipeline_interop.sh CHECK_EXE WORK_DIR
#
# groot_oracle.py builds the tiny GR00T; groot_stats_pipeline_oracle.py derives two base checkpoints from it
# and runs LeRobot's processors and policy on them; CHECK_EXE (tests/interop/groot_stats_pipeline_check.cpp)
# loads LeRobot's folders, compares everything and saves lrhost's; the oracle's --reload loads those with
# LeRobot and checks it computes the same. Exits 77 (ctest's skip code) when the oracle is unavailable.
set -euo pipefail
check="${1:?usage: groot_stats_pipeline_interop.sh CHECK_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/oracle_python.sh"
require_oracle_python "tree, lerobot.policies.groot.modeling_groot"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
"$py" "$here/groot_oracle.py" "$work/oracle"
"$py" "$here/groot_stats_pipeline_oracle.py" "$work/oracle"
HF_HUB_CACHE="$work/oracle/hf_cache" HF_HUB_OFFLINE=1 "$check" "$work/oracle"
"$py" "$here/groot_stats_pipeline_oracle.py" "$work/oracle" --reload
