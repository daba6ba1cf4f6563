#!/usr/bin/env bash
# The EMA of the weights (ema.enable) through the shipped recipes on CPU ranks:
#  - every shipped recipe (ACT DDP and FSDP, Diffusion, SmolVLA, pi0, pi05; tiny) trains 2 steps with
#    it: a pretrained_model_ema/ folder, ema_state.json at step 2, `checkpoint info` names it, and
#    `lrhost show` plans the bytes the run holds; SmolVLA and pi0 also on 2 FSDP ranks;
#  - the tiny pi05 resumed from its step-2 checkpoint ends with the EMA of the uninterrupted 4 steps,
#    byte for byte (the EMA folder and the shadows);
#  - the tiny pi05 on 2 DDP ranks, with ema.on_main_only (the shadow on rank 0 only: the same EMA weights, byte for
#    byte; rank 1 holds none) and on 2 FSDP ranks (each rank its shards) gives the EMA weights of DDP;
#    the FSDP checkpoint resumes in one process, the DDP one under FSDP, with the EMA restored;
#  - pi05 with LoRA under FSDP: only the adapters are averaged, pretrained_model_ema/ is an adapter
#    folder;
#  - `lrhost eval RUN --weights ema` rolls out the EMA weights; the errors name the key.
# Usage: ema_train.sh LRHOST WORK_DIR RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 recipes=$3
declare -A small
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
# shellcheck source=lrhost_calls.sh
source "$(dirname "${BASH_SOURCE[0]}")/lrhost_calls.sh"
tiny=(batch_size=2 log_freq=1 eval_batches=1 num_workers=1 ema.enable=true)
# Small ACT and Diffusion networks (the recipes train LeRobot's 52 M and 263 M parameters): every
# checkpoint holds the weights, the EMA weights, their shadows and the optimizer state.
act=(policy.dim_model=64 policy.dim_feedforward=128 policy.n_heads=2 policy.n_encoder_layers=1
  policy.n_vae_encoder_layers=1)
small=([act_ddp]="${act[*]}" [act_fsdp]="${act[*]}" [diffusion_ddp]="policy.down_dims=[32,64] policy.diffusion_step_embed_dim=32")

# Every shipped recipe, 2 steps.
for recipe in act_ddp act_fsdp diffusion_ddp smolvla pi0 pi05; do
  # shellcheck disable=SC2206  # the small network's overrides, split as words
  sizes=(${small[$recipe]:-})
  run "$work/$recipe.log" --device cpu "$recipes/$recipe.lua" output_dir="$work/$recipe" steps=2 save_freq=2 "${tiny[@]}" \
    "${sizes[@]}"
  step="$work/$recipe/checkpoints/000002"
  [ -f "$step/pretrained_model_ema/config.json" ] || fail "$recipe: no pretrained_model_ema/config.json"
  grep -q '"optimization_step": 2' "$step/training_state/ema_state.json" || fail "$recipe: $(cat "$step/training_state/ema_state.json")"
done
# `lrhost show` plans the EMA's bytes as the run holds them (ACT trains every parameter: 4 bytes each).
export LRHOST_PLAN_JSON="$work/plan.json"
run "$work/show.log" show "$recipes/act_ddp.lua" ema.enable=true "${act[@]}"
unset LRHOST_PLAN_JSON
planned=$(jq '.strategies[] | select(.name == "ddp") | .ema_bytes' "$work/plan.json")
held=$(sed -n 's/.*memory per rank (single): .*, ema \([0-9]*\) bytes.*/\1/p' "$work/act_ddp.log")
[ -n "$held" ] && [ "$planned" = "$held" ] || fail "show plans $planned EMA bytes, the run holds $held"
# On 2 ranks too, sharded (the VLAs; ACT's DDP and FSDP runs and pi05's LoRA run follow below).
for recipe in smolvla pi0; do
  run "$work/${recipe}_fsdp.log" --nproc 2 --device cpu "$recipes/$recipe.lua" output_dir="$work/${recipe}_fsdp" steps=2 \
    save_freq=2 parallelism.dp_shard=2 "${tiny[@]}"
  jq -e '.ema == true' "$work/${recipe}_fsdp/checkpoints/000002/training_state/fsdp_shards/index.json" > /dev/null \
    || fail "$recipe on 2 FSDP ranks: the shards hold no EMA"
done
run "$work/info.log" checkpoint info "$work/act_ddp"
grep -q "ema: step 2, last decay 0.40" "$work/info.log" || fail "checkpoint info: $(grep -i ema "$work/info.log")"

# Resume == uninterrupted (the tiny pi05 from here on: its checkpoints are small).
run "$work/pi05_4.log" --device cpu "$recipes/pi05.lua" output_dir="$work/pi05_4" steps=4 save_freq=2 "${tiny[@]}"
cp -r "$work/pi05_4" "$work/half"
rm -rf "$work/half/checkpoints/000004" "$work/half/checkpoints/last"
ln -s 000002 "$work/half/checkpoints/last"
run "$work/resume.log" resume "$work/half"
for f in pretrained_model_ema/model.safetensors training_state/ema_shadow.safetensors; do
  cmp "$work/half/checkpoints/000004/$f" "$work/pi05_4/checkpoints/000004/$f" || fail "resumed $f differs"
done

# DDP, DDP with the shadow on rank 0 only, FSDP: 2 ranks x batch 1.
two=(steps=4 save_freq=1 batch_size=1 log_freq=1 eval_batches=1 num_workers=1 ema.enable=true)
run "$work/ddp.log" --nproc 2 --device cpu "$recipes/pi05.lua" output_dir="$work/ddp" "${two[@]}"
run "$work/main_only.log" --nproc 2 --device cpu "$recipes/pi05.lua" output_dir="$work/main_only" "${two[@]}" \
  ema.on_main_only=true
cmp "$work/main_only/checkpoints/000004/pretrained_model_ema/model.safetensors" \
  "$work/ddp/checkpoints/000004/pretrained_model_ema/model.safetensors" || fail "on_main_only changed the EMA weights"
grep "\[rank1\].*memory per rank" "$work/main_only.log" | grep -q "ema" && fail "rank 1 holds an EMA with on_main_only"
grep -q "\[rank0\].*memory per rank.*ema [0-9]* bytes" "$work/main_only.log" || fail "rank 0 holds no EMA"
run "$work/fsdp.log" --nproc 2 --device cpu "$recipes/pi05.lua" output_dir="$work/fsdp" "${two[@]}" \
  parallelism.dp_shard=2
# FSDP and DDP differ only in the order of the gradient reductions; the EMA weights, convex
# combinations of each run's live weights, differ at most as those do (compare_ema.lua).
run "$work/fsdp_vs_ddp.log" --device cpu "$here/compare_ema.lua" a="$work/fsdp" b="$work/ddp" steps=4
# The FSDP checkpoint in one process, the DDP one under FSDP: the EMA goes on from step 2.
for case in fsdp:1:1 ddp:2:2; do
  IFS=: read -r from nproc shard <<< "$case"
  cp -r "$work/$from" "$work/${from}_resumed"
  rm -rf "$work/${from}_resumed/checkpoints/00000"[34] "$work/${from}_resumed/checkpoints/last"
  ln -s 000002 "$work/${from}_resumed/checkpoints/last"
  run "$work/${from}_resumed.log" resume "$work/${from}_resumed" --nproc "$nproc" --device cpu parallelism.dp_shard="$shard"
  grep -q '"optimization_step": 4' "$work/${from}_resumed/checkpoints/000004/training_state/ema_state.json" \
    || fail "$from resumed: the EMA did not go on from step 2"
  grep -q "has no EMA state" "$work/${from}_resumed.log" && fail "$from resumed: the EMA state was not found"
done

# LoRA under FSDP: the adapters alone.
run "$work/base.log" --device cpu "$recipes/pi05.lua" output_dir="$work/base" steps=1 save_freq=1 batch_size=2 \
  eval_batches=1 num_workers=1
run "$work/lora.log" --nproc 2 --device cpu "$recipes/pi05.lua" output_dir="$work/lora" steps=2 save_freq=2 \
  policy.pretrained_path="$work/base/checkpoints/000001/pretrained_model" policy.peft.method_type=LORA \
  parallelism.dp_shard=2 "${tiny[@]}"
lora_ema="$work/lora/checkpoints/000002/pretrained_model_ema"
[ -f "$lora_ema/adapter_model.safetensors" ] && [ -f "$lora_ema/adapter_config.json" ] && [ ! -e "$lora_ema/model.safetensors" ] \
  || fail "the LoRA EMA folder is not an adapter folder: $(ls "$lora_ema")"
if jq -r '.params | keys[]' "$work/lora/checkpoints/000002/training_state/fsdp_shards/index.json" | grep -v lora_; then
  fail "the LoRA run averages more than its adapters"
fi

# Evaluation with the EMA weights: the eval_freq rollouts during training, then `lrhost eval`; the errors.
run "$work/rollouts.log" --device cpu "$recipes/act_ddp.lua" output_dir="$work/rollouts" steps=2 save_freq=2 eval_freq=2 \
  eval.episodes=1 eval.videos=0 eval.max_steps=5 "${tiny[@]}" "${act[@]}"
grep -q "closed-loop evaluation at step 2 with the EMA weights (EMA step 2)" "$work/rollouts.log" \
  || fail "the eval_freq rollouts did not use the EMA weights"
[ -f "$work/rollouts/eval/000002/summary.json" ] || fail "no rollout summary"
refused "$work/main_only_rollouts.log" "ema.on_main_only = true keeps the EMA weights on rank 0 only" --nproc 2 \
  --device cpu "$recipes/pi05.lua" output_dir="$work/x3" "${two[@]}" eval_freq=2 ema.on_main_only=true
run "$work/eval.log" eval "$work/act_ddp" --weights ema --episodes 2 --videos 0 --max-steps 5 --device cpu
grep -q "pretrained_model_ema" "$work/eval.log" || fail "eval --weights ema did not load the EMA weights"
refused "$work/eval_plain.log" "has no pretrained_model_ema/" eval "$work/base" --weights ema --episodes 1 --device cpu
refused "$work/main_only_fsdp.log" "ema.on_main_only = true under FSDP" --nproc 2 --device cpu "$recipes/pi05.lua" \
  output_dir="$work/x1" "${two[@]}" parallelism.dp_shard=2 ema.on_main_only=true
refused "$work/decay.log" "ema.decay must be in [0, 1]" --device cpu "$recipes/act_ddp.lua" output_dir="$work/x2" \
  "${tiny[@]}" "${act[@]}" ema.decay=2
refused "$work/flag.log" "lrhost has it: give ema.on_main_only=true" lerobot-train --policy.type=act --ema.enable=true \
  --ema.on_main_only=true
echo "ok: the EMA trains with every recipe, resumes exactly, shards, averages LoRA adapters and evaluates"
