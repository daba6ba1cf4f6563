#!/usr/bin/env bash
# The memory plan of `lrhost show` against what training measures: shows RECIPE for NPROC ranks with
# LRHOST_PLAN_JSON set, trains one step of the same recipe and overrides, and requires the logged
# per-rank parameter, gradient and optimizer-state bytes (acc:memory_stats after the first optimizer
# step) to equal the plan's figures for the selected strategy exactly.
# Usage: fsdp_plan_memory.sh LRHOST WORK_DIR NPROC RECIPE [overrides...]
set -euo pipefail
exe=$1 work=$2 nproc=$3 recipe=$4
shift 4
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
LRHOST_PLAN_JSON="$work/plan.json" timeout 120 "$exe" show "$recipe" --nproc "$nproc" "$@" | tee "$work/show.txt"
grep -q "<- this config" "$work/show.txt" || fail "show printed no plan"
timeout 300 "$exe" --nproc "$nproc" --device cpu --run-dir "$work/run" "$recipe" steps=1 log_freq=1 save_freq=0 \
  output_dir="$work/out" "$@" 2>&1 | tee "$work/train.log"
line=$(grep -o "memory per rank (.*): parameters [0-9]*, gradients [0-9]*, optimizer state [0-9]* bytes" "$work/train.log" | head -1)
[ -n "$line" ] || fail "training logged no memory line"
read -r params grads optim < <(echo "$line" | sed -E 's/.*parameters ([0-9]+), gradients ([0-9]+), optimizer state ([0-9]+) bytes/\1 \2 \3/')
python3 - "$work/plan.json" "$params" "$grads" "$optim" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
chosen = plan["strategies"][0]
measured = dict(parameter_bytes=int(sys.argv[2]), gradient_bytes=int(sys.argv[3]), optimizer_bytes=int(sys.argv[4]))
for key, value in measured.items():
    if chosen[key] != value:
        sys.exit(f"FAIL: {plan['strategy']}: plan says {key} = {chosen[key]}, training measured {value}")
print(f"plan matches measurement: {plan['strategy']}, {plan['world_size']} ranks: " +
      ", ".join(f"{k} {v}" for k, v in measured.items()))
PY
