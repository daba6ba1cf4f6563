#!/usr/bin/env bash
# accelerate's config files through `lrhost lerobot-train`, as LeRobot's multi-GPU guide and TRL's
# "Distributing Training" page have users type them: each guide/TRL command with --config_file (dry
# run: the printed key-by-key mapping and lrhost command), one real 2-rank CPU run of ACT from the
# guide's fsdp.yaml that must really shard, and accelerate's saved default config ($HF_HOME/accelerate/
# default_config.yaml) used by a bare `accelerate launch $(which lerobot-train) ...`; without one, one
# process as before.
# Usage: accelerate_config.sh LRHOST WORK_DIR FIXTURES_DIR
set -euo pipefail
exe=$1 work=$2 fixtures=$3/accelerate
rm -rf "$work"
mkdir -p "$work/bin" "$work/no_hf_home"
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout 300 "$exe" "$@"; }
# No saved accelerate config unless a case makes one; datasets where LeRobot keeps them.
export HF_HOME="$work/no_hf_home" HF_LEROBOT_HOME="$work/lerobot_home" OMP_NUM_THREADS=1
# lerobot-train's ACT starts from torchvision's ImageNet backbone, read from the torch hub cache: a
# random stand-in written by torch.save (tests/lua/backbone_weights.sh checks the loading).
mkdir -p "$work"
export TORCH_HOME="$work/torch_home"
"${LRHOST_PYTHON:-python3}" "$(dirname "$0")/fake_resnet18_pth.py" "$TORCH_HOME"
lerobot_train="$work/bin/lerobot-train"  # what `$(which lerobot-train)` pastes; lrhost skips it
tiny=(--policy.dim_model=64 --policy.dim_feedforward=128 --policy.n_encoder_layers=1 --policy.n_vae_encoder_layers=1
      --policy.chunk_size=10 --policy.n_action_steps=1 eval_batches=2)
lrhost dataset synth --out "$HF_LEROBOT_HOME/user/push" > "$work/synth.log" 2>&1

# The guide's FSDP command (fsdp.yaml with ACT's classes for <YourTransformerBlock>), as printed there.
cp "$fixtures/guide_fsdp.yaml" "$work/fsdp.yaml"
(cd "$work" && lrhost lerobot-train --config_file fsdp.yaml --num_processes=4 "$lerobot_train" \
  --dataset.repo_id=user/my_dataset --policy.type=act --output_dir=outputs/train/my_policy_fsdp --dry-run) \
  > "$work/guide.log" 2>&1 || { cat "$work/guide.log" >&2; fail "the guide's FSDP command failed"; }
grep -q "accelerate config fsdp.yaml (--config_file):" "$work/guide.log" || fail "the log does not name the file"
grep -q "num_processes: 4 -> overridden: --num_processes=4 typed beside the file wins" "$work/guide.log" ||
  fail "$(grep num_processes "$work/guide.log")"
grep -q "fsdp_config.fsdp_sharding_strategy: FULL_SHARD -> parallelism.dp_shard=-1 .*FSDP ZeRO-3" "$work/guide.log" ||
  fail "FULL_SHARD did not map to ZeRO-3"
grep -q "fsdp_config.fsdp_use_orig_params: true -> no effect" "$work/guide.log" || fail "fsdp_use_orig_params not listed"
grep -Eq "lrhost [^ ]*act_ddp.lua --nproc 4 .*accelerator.mixed_precision=bf16 parallelism.dp_shard=-1 parallelism.dp_replicate=1 accelerator.fsdp.reshard_after_forward=true accelerator.fsdp.wrap_modules=ACTEncoderLayer,ACTDecoderLayer" \
  "$work/guide.log" || fail "the lrhost command: $(grep -A1 'maps to' "$work/guide.log")"

# TRL: `accelerate launch --config_file examples/accelerate_configs/<template>.yaml train.py`.
check_template() {  # template, then the pattern its lrhost command must match
  lrhost lerobot-train --config_file "$fixtures/$1.yaml" "$lerobot_train" --policy.type=act \
    --dataset.repo_id=user/push --dry-run > "$work/$1.log" 2>&1 || { cat "$work/$1.log" >&2; fail "$1 failed"; }
  grep -q "accelerate config .*$1.yaml (--config_file):" "$work/$1.log" || fail "$1: the file is not named"
  grep -q "tpu_use_sudo: false -> no effect: TPU only" "$work/$1.log" || fail "$1: not every key listed"
  grep -Eq -e "$2" "$work/$1.log" || fail "$1: $(grep -A1 'maps to' "$work/$1.log")"
}
check_template multi_gpu "act_ddp.lua --nproc 8 .*accelerator.mixed_precision=bf16 steps="
grep -q "parallelism" "$work/multi_gpu.log" && fail "multi_gpu.yaml should train DDP"
check_template deepspeed_zero1 "--nproc 8 .*parallelism.dp_shard=-1 .*reshard_after_forward=false"
grep -q "no ZeRO-1" "$work/deepspeed_zero1.log" || fail "ZeRO-1 -> ZeRO-2 not said"
check_template deepspeed_zero2 "--nproc 8 .*parallelism.dp_shard=-1 .*reshard_after_forward=false"
check_template deepspeed_zero3 "--nproc 8 .*parallelism.dp_shard=-1 .*reshard_after_forward=true"
check_template fsdp1 "--nproc 8 .*parallelism.dp_shard=-1 .*reshard_after_forward=true"
check_template fsdp2 "--nproc 8 .*parallelism.dp_shard=-1 .*reshard_after_forward=true"
# An offloading config is refused with the reason, naming the file and key.
printf 'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_offload_params: true\n' > "$work/offload.yaml"
if lrhost lerobot-train --config_file "$work/offload.yaml" --policy.type=act --dry-run > "$work/offload.log" 2>&1; then
  fail "fsdp_offload_params: true was accepted"
fi
grep -q "offload.yaml: fsdp_config.fsdp_offload_params: true cannot be honoured" "$work/offload.log" ||
  fail "$(cat "$work/offload.log")"

# A real run: ACT from the guide's fsdp.yaml on 2 CPU ranks; the plan line shows the sharding. fp32
# typed beside the file (it wins): bf16 autocast under FSDP is for GPUs (on CPU it stops with "mixed dtype").
lrhost lerobot-train --config_file "$work/fsdp.yaml" --num_processes=2 --device cpu --mixed_precision=no "$lerobot_train" \
  --policy.type=act --dataset.repo_id=user/push --batch_size=2 --steps=2 --save_freq=2 \
  --output_dir="$work/act_fsdp" "${tiny[@]}" > "$work/fsdp_run.log" 2>&1 ||
  { cat "$work/fsdp_run.log" >&2; fail "the FSDP run from fsdp.yaml failed"; }
grep -q "fsdp zero-3 (dp_shard 2 x dp_replicate 1)" "$work/fsdp_run.log" ||
  fail "the run did not shard: $(grep -i 'fsdp\|ddp' "$work/fsdp_run.log" | head -5)"
[ -f "$work/act_fsdp/checkpoints/000002/pretrained_model/model.safetensors" ] || fail "no full pretrained_model at step 2"

# accelerate's saved default config: a bare `accelerate launch $(which lerobot-train) ...` uses it.
mkdir -p "$work/hf_home/accelerate"
printf 'compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nnum_processes: 2\nuse_cpu: true\nmixed_precision: '"'no'"'\n' \
  > "$work/hf_home/accelerate/default_config.yaml"
HF_HOME="$work/hf_home" lrhost lerobot-train "$lerobot_train" --policy.type=act --dataset.repo_id=user/push \
  --output_dir="$work/act_default" --dry-run > "$work/default.log" 2>&1 ||
  { cat "$work/default.log" >&2; fail "the saved default config failed"; }
grep -q "accelerate config $work/hf_home/accelerate/default_config.yaml (accelerate's saved default config):" \
  "$work/default.log" || fail "the log does not name the default config: $(head -3 "$work/default.log")"
grep -Eq "act_ddp.lua --nproc 2 --device cpu " "$work/default.log" || fail "$(grep -A1 'maps to' "$work/default.log")"
# Without any saved config: one process, as before.
lrhost lerobot-train "$lerobot_train" --policy.type=act --dataset.repo_id=user/push --output_dir="$work/act_one" \
  --dry-run > "$work/none.log" 2>&1 || { cat "$work/none.log" >&2; fail "lerobot-train without a config failed"; }
grep -q "accelerate config" "$work/none.log" && fail "an accelerate config was read: $(cat "$work/none.log")"
grep -Eq "act_ddp.lua --run-dir " "$work/none.log" || fail "not one process: $(grep -A1 'maps to' "$work/none.log")"
echo "ok: accelerate config files"
