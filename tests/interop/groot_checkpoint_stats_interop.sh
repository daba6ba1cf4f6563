#!/usr/bin/env bash
# Interop test of lrhost's GR00T N1.7 checkpoint-statistics numerics (host/policy/groot/
# groot_checkpoint_stats) against LeRobot 0.6.1's own loaders and processor steps:
#
#   groot_checkpoint_stats_interop.sh CHECK_EXE WORK_DIR
#
# groot_checkpoint_stats_oracle.py writes synthetic checkpoint folders (statistics.json,
# processor_config.json) and runs _load_n1_7_checkpoint_stats, GrootN17PackInputsStep and
# GrootN17ActionDecodeStep on them (no model, no Hub); CHECK_EXE (tests/interop/
# groot_checkpoint_stats_check.cpp) parses the same folders and recomputes every output. Exits 77
# (ctest's skip code) when the oracle is unavailable.
set -euo pipefail
check="${1:?usage: groot_checkpoint_stats_interop.sh CHECK_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/oracle_python.sh"
require_oracle_python "lerobot.policies.groot.processor_groot"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
"$py" "$here/groot_checkpoint_stats_oracle.py" "$work/oracle"
"$check" "$work/oracle"
