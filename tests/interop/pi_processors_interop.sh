#!/usr/bin/env bash
# Interop test of pi0/pi05's processor pipelines against LeRobot 0.6.1 (pi_processors_interop.py):
#
#   pi_processors_interop.sh CHECK_EXE WORK_DIR
#
# Exits 77 (ctest's skip code) when the oracle's python is unavailable; LRHOST_INTEROP_PYTHON overrides it.
set -euo pipefail
check="${1:?usage: pi_processors_interop.sh CHECK_EXE WORK_DIR}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/oracle_python.sh"
require_oracle_python "tokenizers, transformers, lerobot.policies.pi05.processor_pi05"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
exec "$py" "$here/pi_processors_interop.py" "$check" "$work"
