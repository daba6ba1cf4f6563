#!/usr/bin/env bash
# Interop test of host/metrics/TensorBoardWriter against TensorBoard 2.21's own readers
# (docs/tensorboard.md):
#
#   tensorboard_interop.sh WRITE_EXE WORK_DIR
#
# WRITE_EXE (tests/interop/tensorboard_write.cpp) writes a crashed run and its resume into one
# folder and lists what it wrote; tensorboard_check.py reads the folder with TensorBoard's record
# reader and event accumulators and compares. Exits 77 (ctest's skip code) when the oracle's python
# or its tensorboard is unavailable. LRHOST_INTEROP_PYTHON overrides the python.
set -euo pipefail
write="${1:?usage: tensorboard_interop.sh WRITE_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

source "$here/oracle_python.sh"
require_oracle_python "tensorboard.backend.event_processing.plugin_event_accumulator"

rm -rf "$work"
mkdir -p "$work"
"$write" "$work/logs" "$work/expected.json"
"$py" "$here/tensorboard_check.py" "$work/logs" "$work/expected.json"
