#!/usr/bin/env bash
# FSDP sharded checkpoints resumed at another rank count (resume.lua with parallelism.dp_shard=-1,
# no dropout): run A trains STEPS steps on BEFORE ranks without a break; run B stops after saving
# step STOP on BEFORE ranks and `lrhost resume` continues it on AFTER ranks. The global batch is the
# same on both sides (batch_size = GLOBAL / ranks), so the sampler hands out the same samples per step
# and B must end with A's parameters and per-step losses within TOLERANCE (relative: the reduction
# order changes with the rank count; frozen parameters bit for bit). Then damaged copies of the
# step-STOP checkpoint must fail with errors naming the shard file: one truncated, one missing.
# Usage: fsdp_resume.sh LRHOST WORK_DIR BEFORE AFTER GLOBAL_BATCH TOLERANCE [KEY=VALUE...]
# The KEY=VALUE overrides go to both runs of resume.lua (and so to the resumed one): steps=, save_freq=
# and stop_after= replace the defaults 30, 10 and 12; e.g. policy=smolvla vlm=ABS_DIR steps=10
# save_freq=4 stop_after=6 tests the tiny SmolVLA (frozen VLM, trainable expert);
# parallelism.dp_shard=BEFORE types the old rank count, as for a fixed-size FSDP job: `lrhost resume`
# must re-derive it for AFTER ranks and say so. Each lrhost call is
# killed after FSDP_RESUME_CALL_TIMEOUT seconds (default 120).
set -euo pipefail
exe=$1 work=$2 before=$3 after=$4 global=$5 tolerance=$6
shift 6
steps=30 save_freq=10 stop=12 extra=()
for arg in "$@"; do
  case $arg in
    steps=*) steps=${arg#steps=} ;;
    save_freq=*) save_freq=${arg#save_freq=} ;;
    stop_after=*) stop=${arg#stop_after=} ;;
    *=*) extra+=("$arg") ;;
    *) echo "FAIL: expected KEY=VALUE, got '$arg'" >&2; exit 1 ;;
  esac
done
recipe="$(cd "$(dirname "$0")" && pwd)/resume.lua"
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout "${FSDP_RESUME_CALL_TIMEOUT:-120}" "$exe" "$@"; }
common=(parallelism.dp_shard=-1 dropout=0 steps="$steps" save_freq="$save_freq" ${extra[@]+"${extra[@]}"})
step_dir=$(printf "%06d" "$stop")
(( global % before == 0 && global % after == 0 )) || fail "GLOBAL_BATCH must divide by both rank counts"

lrhost run --nproc "$before" --device cpu --run-dir "$work/run_a" "$recipe" output_dir="$work/a" \
  result="$work/a.safetensors" batch_size=$((global / before)) "${common[@]}"
lrhost run --nproc "$before" --device cpu --run-dir "$work/run_b" "$recipe" output_dir="$work/b" \
  result="$work/b.safetensors" batch_size=$((global / before)) stop_after="$stop" "${common[@]}"
shards="$work/b/checkpoints/$step_dir/training_state/fsdp_shards"
[ -e "$shards/index.json" ] || fail "no shard index in $shards"
[ "$(ls "$shards" | grep -c '^rank_.*\.safetensors$')" = "$before" ] || fail "expected $before shard files"
lrhost checkpoint info "$work/b" | tee "$work/info.txt"
grep -q "sharded (FSDP): $before shard file(s)" "$work/info.txt" || fail "checkpoint info does not describe the shards"

# Damaged copies first (the intact checkpoint is resumed last).
for damage in truncate remove; do
  copy="$work/damaged_$damage"
  mkdir -p "$copy" && cp -r "$work/b/checkpoints" "$copy/"
  file="$copy/checkpoints/$step_dir/training_state/fsdp_shards/rank_1.safetensors"
  if [ $damage = truncate ]; then truncate -s 100 "$file"; else rm "$file"; fi
  set +e
  lrhost resume --nproc "$after" --device cpu --run-dir "$work/run_$damage" "$copy/checkpoints/$step_dir" \
    batch_size=$((global / after)) > "$work/$damage.log" 2>&1
  code=$?
  set -e
  [ $code -ne 0 ] || fail "resuming a checkpoint with a ${damage}d shard file succeeded"
  if [ $damage = truncate ]; then
    grep -q "rank_1.safetensors" "$work/$damage.log" || fail "the truncated shard's error does not name the file"
  else
    grep -q "incomplete checkpoint (missing training_state/fsdp_shards/rank_1.safetensors)" "$work/$damage.log" ||
      fail "the missing shard is not reported"
  fi
done

lrhost resume --nproc "$after" --device cpu --run-dir "$work/run_resume" "$work/b" \
  batch_size=$((global / after)) 2>&1 | tee "$work/resume.log"
grep -Eq "resumed from step $stop( |$)" "$work/resume.log" || fail "the resumed run did not start from step $stop"
grep -q "fsdp zero-3 (dp_shard $after x dp_replicate 1)" "$work/resume.log" || fail "the resumed run is not FSDP on $after ranks"
if printf '%s\n' ${extra[@]+"${extra[@]}"} | grep -qx "parallelism.dp_shard=$before"; then
  grep -q "parallelism.dp_shard=$before was the saved run's rank count: resuming with parallelism.dp_shard=-1" \
    "$work/resume.log" || fail "the typed dp_shard=$before was not re-derived for $after ranks with a note"
fi
lrhost run --device cpu --run-dir "$work/run_compare" "$recipe" \
  compare="$work/a.safetensors,$work/b.safetensors" tolerance="$tolerance"
