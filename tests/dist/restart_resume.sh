#!/usr/bin/env bash
# Restarts resume (see resume.lua): run A trains without a break; in run B rank 0 dies by SIGKILL
# right after saving step 12, and the launcher restarts the group (--max-restarts 1), which must
# continue from that checkpoint (resume = false is "auto" after a restart), not from step 1, and
# end with A's parameters, losses and learning rates (TOLERANCE 0: bit for bit). Then the same for a
# restarted `lrhost resume` job, which must continue from its own newest checkpoint.
# Usage: restart_resume.sh LRHOST WORK_DIR NPROC TOLERANCE
set -euo pipefail
exe=$1 work=$2 nproc=$3 tolerance=$4
recipe="$(cd "$(dirname "$0")" && pwd)/resume.lua"
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout -k 5 120 "$exe" "$@"; }

lrhost run --nproc "$nproc" --device cpu --run-dir "$work/run_a" "$recipe" output_dir="$work/a" \
  result="$work/a.safetensors"
lrhost run --nproc "$nproc" --device cpu --max-restarts 1 --run-dir "$work/run_b" "$recipe" output_dir="$work/b" \
  result="$work/b.safetensors" kill_after=12 2>&1 | tee "$work/b.log"
grep -q "restarting the group: restart 1 of 1" "$work/b.log" || fail "the group was not restarted"
grep -q "resumed from step 12" "$work/b.log" || fail "the restarted group did not resume from step 12"
[ "$(grep -c "checkpoint: saved step 10 " "$work/run_b/logs/rank0.log" || true)" -le 1 ] ||
  fail "step 10 was saved twice: the restart started again from step 1"
[ -e "$work/b.safetensors" ] || fail "the restarted run wrote no result"
lrhost run --device cpu --run-dir "$work/run_compare" "$recipe" \
  compare="$work/a.safetensors,$work/b.safetensors" tolerance="$tolerance"

# The same through `lrhost resume`: run C stops after step 12; its resume job dies after saving step
# 20, and the restarted group must continue from 20 (its own newest checkpoint), not from the 12
# the resume command named.
lrhost run --nproc "$nproc" --device cpu --run-dir "$work/run_c" "$recipe" output_dir="$work/c" \
  result="$work/c.safetensors" stop_after=12
lrhost resume --nproc "$nproc" --device cpu --max-restarts 1 --run-dir "$work/run_c_resume" "$work/c" \
  kill_after=20 2>&1 | tee "$work/c.log"
grep -q "restarting the group: restart 1 of 1" "$work/c.log" || fail "the resume job was not restarted"
grep -q "resumed from step 20" "$work/c.log" || fail "the restarted resume job did not continue from step 20"
lrhost run --device cpu --run-dir "$work/run_compare_c" "$recipe" \
  compare="$work/a.safetensors,$work/c.safetensors" tolerance="$tolerance"
