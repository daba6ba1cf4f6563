#!/usr/bin/env bash
# The async checkpoint's host copy in `lrhost show`'s plan against what a save copies: shows RECIPE
# with save_async=true (LRHOST_PLAN_JSON), trains one step saving asynchronously, and requires the
# logged "copies N bytes" of rank 0 to be non-zero and within 2% of the plan's async_checkpoint_bytes
# (the plan counts parameters; the copy adds buffers and Adam's 4-byte step per parameter).
# Usage: async_plan_memory.sh LRHOST WORK_DIR NPROC RECIPE [overrides...]
set -euo pipefail
exe=$1 work=$2 nproc=$3 recipe=$4
shift 4
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
LRHOST_PLAN_JSON="$work/plan.json" timeout 120 "$exe" show "$recipe" --nproc "$nproc" save_async=true "$@" | tee "$work/show.txt"
grep -q "async checkpoint host copy" "$work/show.txt" || fail "show printed no async checkpoint line"
timeout 300 "$exe" --nproc "$nproc" --device cpu --run-dir "$work/run" "$recipe" steps=1 log_freq=1 save_freq=1 \
  save_async=true output_dir="$work/out" "$@" 2>&1 | tee "$work/train.log"
copied=$(grep -o "copies [0-9]* bytes to host memory" "$work/train.log" | head -1 | grep -o "[0-9]*" | head -1)
[ -n "$copied" ] || fail "training logged no copy"
python3 - "$work/plan.json" "$copied" <<'PY'
import json, sys
planned, copied = json.load(open(sys.argv[1]))["async_checkpoint_bytes"], int(sys.argv[2])
if planned <= 0 or copied <= 0 or abs(copied - planned) > 0.02 * planned:
    sys.exit(f"FAIL: plan says async_checkpoint_bytes = {planned}, the save copied {copied}")
print(f"async checkpoint copy: plan {planned} bytes, copied {copied} bytes")
PY
