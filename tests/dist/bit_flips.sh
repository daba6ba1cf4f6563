#!/usr/bin/env bash
# Silent corruption at process level (the Reliability figure "bit flips detected / planted"): FLIPS
# times, one random bit of the tensor data of one file of the newest checkpoint (000010) of a run
# that saved steps 5 and 10 is flipped, and a run with resume=true must find it while reading (a
# warning naming the file and the byte range) and continue from step 5. The files take turns:
# model.safetensors and optimizer_state.safetensors of a one-process run, and model.safetensors and
# the shard files rank_0 / rank_1.safetensors of a 2-rank FSDP run (each rank verifies its own
# shards). Every attempt runs on a fresh copy of the pristine run folder. Prints one summary line:
# planted, detected, resumed from step 5, per file; exits non-zero when any flip went undetected.
# Usage: bit_flips.sh LRHOST WORK_DIR FLIPS [SEED]
set -uo pipefail
exe=$1 work=$2 flips=$3
RANDOM=${4:-34}
recipe="$(cd "$(dirname "$0")" && pwd)/resume.lua"
# shellcheck source=flip_tensor_bit.sh
source "$(dirname "$0")/flip_tensor_bit.sh"
rm -rf "$work"
mkdir -p "$work"
lrhost() { timeout 120 "$exe" "$@"; }
common=(steps=11 save_freq=5 dropout=0)

# The two pristine runs: one process (model + optimizer files), FSDP on 2 ranks (model + shards).
lrhost run --device cpu --run-dir "$work/run_one" "$recipe" output_dir="$work/one" stop_after=10 \
  "${common[@]}" > "$work/one.log" 2>&1 || { echo "FAIL: the one-process run failed (see $work/one.log)"; exit 1; }
lrhost run --nproc 2 --device cpu --run-dir "$work/run_fsdp" "$recipe" output_dir="$work/fsdp" stop_after=10 \
  parallelism.dp_shard=-1 "${common[@]}" > "$work/fsdp.log" 2>&1 ||
  { echo "FAIL: the FSDP run failed (see $work/fsdp.log)"; exit 1; }

targets=("one pretrained_model/model.safetensors" "one training_state/optimizer_state.safetensors"
         "fsdp pretrained_model/model.safetensors" "fsdp training_state/fsdp_shards/rank_0.safetensors"
         "fsdp training_state/fsdp_shards/rank_1.safetensors")
declare -A planted detected resumed
planted_all=0 detected_all=0 resumed_all=0
for i in $(seq "$flips"); do
  read -r run file <<< "${targets[$(((i - 1) % ${#targets[@]}))]}"
  try="$work/try"
  rm -rf "$try" "$work/run_try"
  cp -r "$work/$run" "$try"
  target="$try/checkpoints/000010/$file"
  flip_tensor_bit "$target"
  launch=(--device cpu)
  extra=()
  [ "$run" = fsdp ] && launch=(--nproc 2 --device cpu) && extra=(parallelism.dp_shard=-1)
  lrhost run "${launch[@]}" --run-dir "$work/run_try" "$recipe" output_dir="$try" resume=true \
    "${common[@]}" ${extra[@]+"${extra[@]}"} > "$work/try.log" 2>&1
  key="$run:$file"
  planted[$key]=$((${planted[$key]:-0} + 1))
  planted_all=$((planted_all + 1))
  if grep -q "000010 is damaged ($file: bytes [0-9]*-[0-9]* data does not match" "$work/try.log"; then
    detected[$key]=$((${detected[$key]:-0} + 1))
    detected_all=$((detected_all + 1))
  else
    echo "undetected: bit $bit of byte $offset of $run/$file (log: $work/undetected_$i.log)"
    cp "$work/try.log" "$work/undetected_$i.log"
  fi
  if grep -q "resumed from step 5" "$work/try.log"; then
    resumed[$key]=$((${resumed[$key]:-0} + 1))
    resumed_all=$((resumed_all + 1))
  fi
done
for target in "${targets[@]}"; do
  read -r run file <<< "$target"
  key="$run:$file"
  echo "  $key: planted ${planted[$key]:-0}, detected ${detected[$key]:-0}, resumed from step 5 ${resumed[$key]:-0}"
done
echo "bit flips: planted $planted_all, detected $detected_all, resumed from the older checkpoint $resumed_all"
[ "$detected_all" -eq "$planted_all" ] && [ "$resumed_all" -eq "$planted_all" ]
