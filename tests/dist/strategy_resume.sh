#!/usr/bin/env bash
# A checkpoint resumed under another strategy (resume.lua, no dropout): FSDP -> DDP or one process,
# and DDP -> FSDP. Run A trains STEPS steps under FROM without a break; run B stops after saving step
# STOP under FROM, and `lrhost resume` continues it under TO (parallelism.dp_shard=-1 for FSDP, 1 for
# DDP). The global batch is the same on both sides, so the sampler hands out the same samples per
# step, and B must end with A's parameters and per-step losses within TOLERANCE (relative: the
# reduction order changes with the layout). FROM and TO are fsdp:N or ddp:N (N ranks; ddp:1 is one
# process without the launcher).
# Usage: strategy_resume.sh LRHOST WORK_DIR FROM TO GLOBAL_BATCH TOLERANCE
set -euo pipefail
exe=$1 work=$2 from=$3 to=$4 global=$5 tolerance=$6
recipe="$(cd "$(dirname "$0")" && pwd)/resume.lua"
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout "${STRATEGY_RESUME_CALL_TIMEOUT:-120}" "$exe" "$@"; }
steps=30 save_freq=10 stop=12
# flags STRATEGY:N -> the launch flags and overrides of that layout, in $launch and $layout
layout_of() {
  local strategy=${1%%:*} ranks=${1##*:}
  launch=(--device cpu)
  [ "$ranks" -gt 1 ] && launch+=(--nproc "$ranks")
  case $strategy in
    fsdp) layout=(parallelism.dp_shard=-1) ;;
    ddp) layout=(parallelism.dp_shard=1) ;;
    *) fail "strategy must be fsdp:N or ddp:N, got '$1'" ;;
  esac
  layout+=(batch_size=$((global / ranks)))
  (( global % ranks == 0 )) || fail "GLOBAL_BATCH must divide by $ranks"
}
common=(dropout=0 steps="$steps" save_freq="$save_freq")

layout_of "$from"
lrhost run "${launch[@]}" --run-dir "$work/run_a" "$recipe" output_dir="$work/a" result="$work/a.safetensors" \
  "${layout[@]}" "${common[@]}"
lrhost run "${launch[@]}" --run-dir "$work/run_b" "$recipe" output_dir="$work/b" result="$work/b.safetensors" \
  stop_after="$stop" "${layout[@]}" "${common[@]}"
step_dir=$(printf "%06d" "$stop")
if [ "${from%%:*}" = fsdp ]; then
  [ -e "$work/b/checkpoints/$step_dir/training_state/fsdp_shards/index.json" ] || fail "run B saved no FSDP shards"
else
  [ -e "$work/b/checkpoints/$step_dir/training_state/optimizer_state.safetensors" ] || fail "run B saved no optimizer state"
fi

layout_of "$to"
lrhost resume "${launch[@]}" --run-dir "$work/run_resume" "$work/b" "${layout[@]}" 2>&1 | tee "$work/resume.log"
grep -Eq "resumed from step $stop( |$)" "$work/resume.log" || fail "the resumed run did not start from step $stop"
if [ "${from%%:*}" = fsdp ]; then
  grep -q "was written sharded (FSDP); this run does not shard: every rank assembles" "$work/resume.log" ||
    fail "the resume does not say it gathers the shards"
else
  grep -q "was written without FSDP; this run shards it with FSDP: each rank cuts its shards" "$work/resume.log" ||
    fail "the resume does not say it cuts the full tensors into shards"
  grep -q "fsdp zero-3" "$work/resume.log" || fail "the resumed run is not FSDP"
fi
lrhost run --device cpu --run-dir "$work/run_compare" "$recipe" \
  compare="$work/a.safetensors,$work/b.safetensors" tolerance="$tolerance"
echo "ok: $from -> $to resumed from step $stop and ended where the uninterrupted run did"
