#!/usr/bin/env bash
# The EMA of the weights against diffusers' EMAModel as LeRobot main uses it (ema_oracle.py), on ACT
# fine-tuned from a 1-step pretrained folder with a checkpoint at every step:
#   schedule   the warm-up schedule (LeRobot's defaults), one process; LeRobot 0.6.1 then loads
#              the last pretrained_model_ema/ as an ordinary policy;
#   constant   a constant decay (--ema.decay=0.9: min = max, the first update still copies);
#   after      update_after_step 1, inv_gamma 2, power 2/3, min_decay 0.2, gradient accumulation 2
#              (one EMA update per optimizer step);
#   fsdp       FSDP on 2 ranks (each rank averages its shards; the gathered EMA weights must still be
#              exactly the rule applied to the gathered live weights).
#
#   run_ema_interop.sh LRHOST_EXE WORK_DIR
# Exits 77 (ctest's skip code) without the oracle's python, 1 on any mismatch.
set -euo pipefail
lrhost="${1:?lrhost executable}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=oracle_python.sh
source "$here/oracle_python.sh"
require_oracle_python "diffusers.training_utils, lerobot.policies.act.modeling_act"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
run() { # run LOG ARGS...: one lrhost call, killed after 300 s
  local log=$1
  shift
  timeout 300 "$lrhost" "$@" > "$log" 2>&1 || { tail -n 30 "$log" >&2; echo "FAIL: lrhost $*" >&2; exit 1; }
}
tiny=(steps=4 save_freq=1 batch_size=4 eval_batches=1 num_workers=1 log_freq=1 ema.enable=true)
# A small ACT (every checkpoint holds the weights, the EMA weights, their shadows and AdamW's state):
# the runs fine-tuned from it inherit its sizes from its config.json.
run "$work/base.log" --device cpu "$repo/recipes/act_ddp.lua" output_dir="$work/base" steps=1 save_freq=1 batch_size=4 \
  eval_batches=1 num_workers=1 policy.dim_model=64 policy.dim_feedforward=128 policy.n_heads=2 \
  policy.n_encoder_layers=1 policy.n_vae_encoder_layers=1
base="$work/base/checkpoints/000001/pretrained_model"

run "$work/schedule.log" --device cpu "$repo/recipes/act_ddp.lua" output_dir="$work/schedule" \
  policy.pretrained_path="$base" "${tiny[@]}"
"$py" "$here/ema_oracle.py" "$work/schedule" "$base" '{}' --lerobot-load
rm -rf "$work/schedule/checkpoints"  # checked: the disk is shared

run "$work/constant.log" lerobot-train --device=cpu --policy.path="$base" --ema.enable=true --ema.decay=0.9 \
  --steps=4 --save_freq=1 --batch_size=4 --output_dir="$work/constant" eval_batches=1 num_workers=1 log_freq=1
"$py" "$here/ema_oracle.py" "$work/constant" "$base" '{"decay": 0.9}'
rm -rf "$work/constant/checkpoints"

run "$work/after.log" --device cpu "$repo/recipes/act_ddp.lua" output_dir="$work/after" policy.pretrained_path="$base" \
  "${tiny[@]}" ema.update_after_step=1 ema.inv_gamma=2 ema.power=0.6666666666666666 ema.min_decay=0.2 \
  accelerator.gradient_accumulation_steps=2 steps=6
"$py" "$here/ema_oracle.py" "$work/after" "$base" \
  '{"update_after_step": 1, "inv_gamma": 2, "power": 0.6666666666666666, "min_decay": 0.2, "accumulation": 2}'
rm -rf "$work/after/checkpoints"

run "$work/fsdp.log" --nproc 2 --device cpu "$repo/recipes/act_ddp.lua" output_dir="$work/fsdp" \
  policy.pretrained_path="$base" "${tiny[@]}" batch_size=2 parallelism.dp_shard=2
"$py" "$here/ema_oracle.py" "$work/fsdp" "$base" '{}'
rm -rf "$work/fsdp/checkpoints"
echo "ok: the EMA equals diffusers' EMAModel in every case"
