#!/usr/bin/env bash
# LoRA fine-tuning through the shipped pi05 recipe (tiny geometry, CPU ranks): a pretrained folder from
# a 1-step run, then adapters trained on it
#  - in one process, with LeRobot's command line (`lrhost lerobot-train --policy.path=... --peft.*`):
#    the checkpoint's pretrained_model/ is an adapter folder (adapter_model.safetensors,
#    adapter_config.json, config.json with use_peft: true, no model.safetensors);
#  - resumed from its step-2 checkpoint, it ends with the adapters of the uninterrupted 4 steps exactly;
#  - with gradient checkpointing, the same adapters; with bf16 autocast and accumulation, it trains;
#  - on 2 DDP ranks, sharded (FSDP ZeRO-3 and ZeRO-2) on 2 ranks and hybrid (2 x 2) on 4, with the
#    adapters of DDP at the same rank count; the FSDP shard files hold only the adapters; the FSDP
#    checkpoint resumes in one process, under FSDP at the same and at another rank count, and the DDP
#    one under FSDP;
#  - `lrhost show` plans the adapters' trainable parameters as the run has them;
#  - `checkpoint info` shows the adapters; `checkpoint merge` writes a plain folder (model.safetensors,
#    use_peft false) that fine-tunes like any pretrained folder; a second merge into it is refused.
# Usage: lora_train.sh LRHOST WORK_DIR RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 recipes=$3
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
# shellcheck source=lrhost_calls.sh
source "$(dirname "${BASH_SOURCE[0]}")/lrhost_calls.sh"
tiny=(batch_size=2 log_freq=1 eval_batches=1 num_workers=1)
run "$work/base.log" --device cpu "$recipes/pi05.lua" output_dir="$work/base" steps=1 save_freq=1 "${tiny[@]}"
base="$work/base/checkpoints/000001/pretrained_model"

# LeRobot's command line: any --peft flag turns LoRA on.
run "$work/lora1.log" lerobot-train --device=cpu --policy.path="$base" --peft.r=4 --peft.lora_alpha=8 \
  --steps=4 --save_freq=2 --batch_size=2 --output_dir="$work/lora1" log_freq=1 eval_batches=1 num_workers=1
adapter="$work/lora1/checkpoints/000004/pretrained_model"
for f in adapter_model.safetensors adapter_config.json config.json; do
  [ -f "$adapter/$f" ] || fail "the LoRA checkpoint has no $f"
done
[ ! -e "$adapter/model.safetensors" ] || fail "the LoRA checkpoint holds the base's weights"
grep -q '"use_peft": true' "$adapter/config.json" || fail "config.json does not say use_peft: true"
grep -q '"r": 4' "$adapter/adapter_config.json" || fail "adapter_config.json: $(grep '"r"' "$adapter/adapter_config.json")"
grep -q "\"base_model_name_or_path\": \"$base\"" "$adapter/adapter_config.json" || fail "the base is not the path given"

# `lrhost show` plans the adapters: its trainable count is what the run's gradients hold (fp32, 4 bytes
# each, from the run's memory line), and --gpu-memory gives a batch.
run "$work/show.log" show "$recipes/pi05.lua" policy.pretrained_path="$base" policy.peft.method_type=LORA \
  policy.peft.r=4 policy.peft.lora_alpha=8 --gpu-memory 1GiB,24GiB
trainable=$(sed -n 's/^  parameters: [0-9]* (\([0-9]*\) trainable).*/\1/p' "$work/show.log")
grads=$(sed -n 's/.*memory per rank (single): parameters [0-9]*, gradients \([0-9]*\),.*/\1/p' "$work/lora1.log")
[ -n "$trainable" ] && [ "$((trainable * 4))" = "$grads" ] || fail "show plans $trainable trainable, the run has $grads gradient bytes"
grep -q "largest batch per rank in 24.0 GiB per GPU" "$work/show.log" || fail "show --gpu-memory printed no batch"

# Resume == uninterrupted: the run's step-4 checkpoint set aside, `lrhost resume` continues from step 2.
cp -r "$work/lora1" "$work/half"
rm -rf "$work/half/checkpoints/000004" "$work/half/checkpoints/last"
ln -s 000002 "$work/half/checkpoints/last"
run "$work/resume.log" resume "$work/half"
grep -q "resume: restored step 2" "$work/resume.log" || fail "did not resume from step 2: $(tail -3 "$work/resume.log")"
cmp "$work/half/checkpoints/000004/pretrained_model/adapter_model.safetensors" "$adapter/adapter_model.safetensors" \
  || fail "resumed adapters differ from the uninterrupted run's"

# Gradient checkpointing composes: the same adapters as without it (fp32 on CPU, the recomputation is the
# same arithmetic). bf16 autocast and gradient accumulation compose too: the run trains (finite losses).
run "$work/ckpt.log" lerobot-train --device=cpu --policy.path="$base" --peft.r=4 --peft.lora_alpha=8 \
  --policy.gradient_checkpointing=true --steps=4 --save_freq=2 --batch_size=2 --output_dir="$work/ckpt" log_freq=1 \
  eval_batches=1 num_workers=1
cmp "$work/ckpt/checkpoints/000004/pretrained_model/adapter_model.safetensors" "$adapter/adapter_model.safetensors" \
  || fail "gradient checkpointing changed the adapters"
run "$work/bf16.log" --device cpu "$recipes/pi05.lua" output_dir="$work/bf16" policy.pretrained_path="$base" \
  policy.peft.method_type=LORA accelerator.mixed_precision=bf16 accelerator.gradient_accumulation_steps=2 steps=2 \
  save_freq=2 "${tiny[@]}"
[ "$(grep -c 'step ./2 .* loss [0-9]' "$work/bf16.log")" = 2 ] || fail "bf16 + accumulation: $(grep 'step ' "$work/bf16.log")"

# Two DDP ranks.
run "$work/ddp.log" --nproc 2 --device cpu "$recipes/pi05.lua" output_dir="$work/ddp" policy.pretrained_path="$base" \
  policy.peft.method_type=LORA policy.peft.r=4 steps=2 save_freq=2 "${tiny[@]}"
[ -f "$work/ddp/checkpoints/000002/pretrained_model/adapter_model.safetensors" ] || fail "no DDP adapter checkpoint"

# FSDP (ZeRO-3 on 2 ranks; LeRobot refuses PEFT under FSDP) == DDP: the same adapter tensors. The two
# differ only in the order of the gradient reductions (fp32, ~1e-7 relative), which AdamW's first two
# updates (each at most lr per element, lr 1.4e-5 then 2.5e-6 here) carry over as at most 1e-3 of a step.
run "$work/fsdp.log" --nproc 2 --device cpu "$recipes/pi05.lua" output_dir="$work/fsdp" policy.pretrained_path="$base" \
  policy.peft.method_type=LORA policy.peft.r=4 steps=2 save_freq=2 parallelism.dp_shard=2 "${tiny[@]}"
fsdp_adapters="$work/fsdp/checkpoints/000002/pretrained_model/adapter_model.safetensors"
run "$work/fsdp_vs_ddp.log" --device cpu "$(dirname "$0")/compare_adapters.lua" a="$fsdp_adapters" \
  b="$work/ddp/checkpoints/000002/pretrained_model/adapter_model.safetensors" tol=1.7e-8
# ZeRO-2 (reshard_after_forward=false) too.
run "$work/zero2.log" --nproc 2 --device cpu "$recipes/pi05.lua" output_dir="$work/zero2" policy.pretrained_path="$base" \
  policy.peft.method_type=LORA policy.peft.r=4 steps=2 save_freq=2 parallelism.dp_shard=2 \
  accelerator.fsdp.reshard_after_forward=false "${tiny[@]}"
grep -q "fsdp zero-2" "$work/zero2.log" || fail "the ZeRO-2 run did not run ZeRO-2"
run "$work/zero2_vs_ddp.log" --device cpu "$(dirname "$0")/compare_adapters.lua" \
  a="$work/zero2/checkpoints/000002/pretrained_model/adapter_model.safetensors" \
  b="$work/ddp/checkpoints/000002/pretrained_model/adapter_model.safetensors" tol=1.7e-8
# Hybrid sharding on 4 ranks (2 shard groups of 2) == DDP on 4 ranks.
for layout in ddp4:1 hybrid:2; do
  run "$work/${layout%%:*}.log" --nproc 4 --device cpu "$recipes/pi05.lua" output_dir="$work/${layout%%:*}" \
    policy.pretrained_path="$base" policy.peft.method_type=LORA policy.peft.r=4 steps=2 save_freq=2 \
    parallelism.dp_shard="${layout##*:}" parallelism.dp_replicate=$((4 / ${layout##*:})) "${tiny[@]}"
done
grep -q "dp_shard 2 x dp_replicate 2" "$work/hybrid.log" || fail "the hybrid run did not shard 2 x 2"
run "$work/hybrid_vs_ddp.log" --device cpu "$(dirname "$0")/compare_adapters.lua" \
  a="$work/hybrid/checkpoints/000002/pretrained_model/adapter_model.safetensors" \
  b="$work/ddp4/checkpoints/000002/pretrained_model/adapter_model.safetensors" tol=1.7e-8
# The save gathers only the adapters, never the frozen base: rank 0's host bytes at the save stay within
# the adapters' parameters and AdamW state (4 x 4 bytes per trainable parameter), not the model's.
peak=$(sed -n 's/.*\[rank0\].*save_host_peak_bytes=\([0-9]*\).*/\1/p' "$work/fsdp.log")
[ -n "$peak" ] && [ "$peak" -le $((16 * trainable)) ] || fail "FSDP LoRA save: rank 0 held $peak host bytes (adapters: $((4 * trainable)))"
# The shard files hold the adapters only, never the frozen base: index.json lists exactly the adapter
# file's tensors (LeRobot's default targets train no module in full).
safetensors_names() { # the tensor names in a safetensors file's header
  local length
  length=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
  tail -c +9 "$1" | head -c "$length" | jq -r 'keys[] | select(. != "__metadata__")'
}
shards="$work/fsdp/checkpoints/000002/training_state/fsdp_shards"
diff <(jq -r '.params | keys[]' "$shards/index.json" | sort) \
  <(safetensors_names "$fsdp_adapters" | sed 's/^base_model\.model\.//' | sort) > "$work/shard_names.diff" \
  || fail "the FSDP shard files do not hold exactly the adapters: $(head -5 "$work/shard_names.diff")"
for r in 0 1; do
  if safetensors_names "$shards/rank_$r.safetensors" | grep -v lora_; then fail "rank_$r holds frozen tensors"; fi
done
# The FSDP checkpoint resumes in one process (2 more steps).
cp -r "$work/fsdp" "$work/fsdp_resumed"
run "$work/fsdp_resume.log" resume "$work/fsdp_resumed" --device cpu steps=4
grep -q "resume: restored step 2" "$work/fsdp_resume.log" || fail "FSDP -> one process: $(tail -3 "$work/fsdp_resume.log")"
[ -f "$work/fsdp_resumed/checkpoints/000004/pretrained_model/adapter_model.safetensors" ] || fail "no step 4 after the resume"
# The DDP checkpoint resumes under FSDP (each rank cuts its shards from the adapter file), and the FSDP
# one under FSDP: one more step each from step 2, on the same samples and layout. They start from the
# DDP and FSDP adapters of step 2 (within 1.7e-8, above) and step 3 adds at most 1e-3 of its AdamW
# update (at most lr, below the peak lr 1.4e-5): 1.7e-8 + 1.4e-8.
cp -r "$work/ddp" "$work/ddp_to_fsdp"
cp -r "$work/fsdp" "$work/fsdp_to_fsdp"
for to in ddp_to_fsdp fsdp_to_fsdp; do
  run "$work/$to.log" resume "$work/$to" --nproc 2 --device cpu parallelism.dp_shard=2 steps=3
  grep -q "resume: restored step 2" "$work/$to.log" || fail "$to: $(tail -3 "$work/$to.log")"
done
grep -q "each rank cuts its shards from the full tensors" "$work/ddp_to_fsdp.log" || fail "DDP -> FSDP did not shard"
run "$work/ddp_to_fsdp_vs.log" --device cpu "$(dirname "$0")/compare_adapters.lua" \
  a="$work/ddp_to_fsdp/checkpoints/000003/pretrained_model/adapter_model.safetensors" \
  b="$work/fsdp_to_fsdp/checkpoints/000003/pretrained_model/adapter_model.safetensors" tol=3.1e-8
# At another rank count (2 -> 3 shard ranks): every rank re-slices the adapters' rows; it trains on.
cp -r "$work/fsdp" "$work/fsdp_to_3"
run "$work/fsdp_to_3.log" resume "$work/fsdp_to_3" --nproc 3 --device cpu parallelism.dp_shard=3 steps=3
grep -q "resume: restored step 2" "$work/fsdp_to_3.log" || fail "FSDP 2 -> 3 ranks: $(tail -3 "$work/fsdp_to_3.log")"
[ -f "$work/fsdp_to_3/checkpoints/000003/pretrained_model/adapter_model.safetensors" ] || fail "no step 3 on 3 ranks"

# checkpoint info, merge.
run "$work/info.log" checkpoint info "$work/lora1"
grep -q "LoRA adapters on base $base: r 4, lora_alpha 8" "$work/info.log" || fail "info: $(cat "$work/info.log")"
run "$work/merge.log" checkpoint merge "$work/lora1" --out "$work/merged"
[ -f "$work/merged/model.safetensors" ] && [ ! -e "$work/merged/adapter_config.json" ] || fail "merge wrote no plain folder"
grep -q '"use_peft": false' "$work/merged/config.json" || fail "the merged config.json: $(grep use_peft "$work/merged/config.json")"
run "$work/tune_merged.log" --device cpu "$recipes/pi05.lua" output_dir="$work/tune_merged" \
  policy.pretrained_path="$work/merged" steps=1 save_freq=1 "${tiny[@]}"
if timeout 60 "$exe" checkpoint merge "$work/lora1" --out "$work/merged" > "$work/merge_over.log" 2>&1; then
  fail "merging into a non-empty folder was not refused"
fi
grep -q "exists and is not an empty folder" "$work/merge_over.log" || fail "merge over a folder: $(cat "$work/merge_over.log")"
if timeout 60 "$exe" checkpoint merge "$work/merged" --out "$work/merged2" > "$work/merge2.log" 2>&1; then
  fail "merging a plain folder was not refused"
fi
grep -q "holds no LoRA adapters" "$work/merge2.log" || fail "merge of a plain folder: $(cat "$work/merge2.log")"
echo "ok: LoRA trains on 1 and 2 ranks, resumes exactly, and merges into a plain policy"
