#!/usr/bin/env bash
# Fine-tuning a pi05 with another policy.dtype than its folder's (LeRobot's documented line,
# --policy.path=<fp32 folder> --policy.dtype=bfloat16): the weights are cast while loading, as LeRobot's
# from_pretrained + .to(dtype) does, and the run says so once. A tiny pi05 (recipes/assets/pi_tiny) is
# trained 1 step in float32, fine-tuned 1 step in bfloat16 (one rank, and FSDP on 2 ranks: each rank casts
# only its shards), and that bf16 folder fine-tuned back in float32. load_cast.lua checks that the
# loaded weights equal the folder's weights cast, tensor for tensor.
# Usage: pretrained_dtype.sh LRHOST WORK_DIR RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 recipes=$3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { # run LOG ARGS...: one lrhost call, killed after 300 s
  local log=$1
  shift
  timeout 300 "$exe" "$@" > "$log" 2>&1 || { tail -n 30 "$log" >&2; fail "lrhost $*"; }
}
tiny=(batch_size=2 steps=1 save_freq=1 log_freq=1 eval_batches=1 num_workers=1)
run "$work/fp32.log" --device cpu "$recipes/pi05.lua" output_dir="$work/fp32" "${tiny[@]}"
fp32="$work/fp32/checkpoints/000001/pretrained_model"
[ -f "$fp32/model.safetensors" ] || fail "no float32 checkpoint"

# The cast, checked on what lr.policy.load gives (file-backed, as the training loop loads).
run "$work/check_bf16.log" --device cpu "$here/load_cast.lua" dir="$fp32" dtype=bfloat16
grep -q "casting pretrained weights float32 -> bfloat16 as LeRobot does" "$work/check_bf16.log" \
  || fail "no cast log line: $(tail -5 "$work/check_bf16.log")"
grep -q "load_cast ok: rank 0 of 1" "$work/check_bf16.log" || fail "$(tail -5 "$work/check_bf16.log")"
run "$work/check_fsdp.log" --nproc 2 --device cpu "$here/load_cast.lua" dir="$fp32" dtype=bfloat16 fsdp=true
[ "$(grep -c "load_cast ok: rank . of 2" "$work/check_fsdp.log")" = 2 ] || fail "FSDP: $(tail -5 "$work/check_fsdp.log")"

# Fine-tuning through the recipe: float32 -> bfloat16, then bfloat16 -> float32.
run "$work/bf16.log" --device cpu "$recipes/pi05.lua" output_dir="$work/bf16" policy.pretrained_path="$fp32" \
  policy.dtype=bfloat16 "${tiny[@]}"
[ "$(grep -c "casting pretrained weights float32 -> bfloat16 as LeRobot does" "$work/bf16.log")" = 1 ] \
  || fail "the cast is not logged once: $(grep -c casting "$work/bf16.log")"
bf16="$work/bf16/checkpoints/000001/pretrained_model"
grep -q '"dtype": "bfloat16"' "$bf16/config.json" || fail "the bf16 run saved $(grep dtype "$bf16/config.json")"
run "$work/back.log" --device cpu "$recipes/pi05.lua" output_dir="$work/back" policy.pretrained_path="$bf16" \
  policy.dtype=float32 "${tiny[@]}"
grep -q "casting pretrained weights bfloat16 -> float32 as LeRobot does" "$work/back.log" || fail "no bf16 -> fp32 cast line"
run "$work/check_back.log" --device cpu "$here/load_cast.lua" dir="$bf16" dtype=float32
grep -q "load_cast ok" "$work/check_back.log" || fail "$(tail -5 "$work/check_back.log")"
echo "ok: float32 <-> bfloat16 fine-tuning casts the pretrained weights"
