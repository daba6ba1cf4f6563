#!/usr/bin/env bash
# Every command line of LeRobot's multi-GPU guide (English; the Korean translation prints the same
# four without FSDP; the Chinese quick start with its dash-less arguments and script path) and the
# lines of TRL's "Distributing Training" page that make sense for lerobot-train, typed as printed
# after `lrhost lerobot-train` (docs/lerobot.md#the-guides-commands). Each is checked on its printed
# mapping (--dry-run; `lerobot/smolvla_base` is a cached tiny SmolVLA written by a short lrhost run);
# two run for real on CPU ranks: the English guide's first command (ACT, 2 data-parallel ranks) and
# the Chinese guide's first command fine-tuning the cached SmolVLA. TRL's equal batches (1 x 32 x 1 = 1 x 4 x 8 = 8 x 4 x 1)
# are checked on the printed effective batch. Not here: `--config_file fsdp.yaml` (accelerate config
# files) and the interactive `accelerate config` lines (docs only).
# Usage: guide_commands.sh LRHOST WORK_DIR RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 recipes=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work"  # the guides' relative output folders land here
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout 300 "$exe" "$@"; }
export HF_LEROBOT_HOME="$work/lerobot_home" HF_HUB_CACHE="$work/hub" OMP_NUM_THREADS=1
# lerobot-train's ACT starts from torchvision's ImageNet backbone, read from the torch hub cache: a
# random stand-in written by torch.save (tests/lua/backbone_weights.sh checks the loading).
mkdir -p "$work"
export TORCH_HOME="$work/torch_home"
"${LRHOST_PYTHON:-python3}" "$(dirname "$0")/fake_resnet18_pth.py" "$TORCH_HOME"
HF_USER=guide_user

# The guides' datasets: one synthetic dataset under each repo id, where LeRobot keeps them.
lrhost dataset synth --out "$HF_LEROBOT_HOME/$HF_USER/my_dataset" > synth.log 2>&1 || { cat synth.log >&2; fail "synth"; }
for repo in lerobot/pusht your-username/your-dataset christianwang-sjtu/so100-red-dustbin; do
  mkdir -p "$HF_LEROBOT_HOME/$(dirname $repo)"
  ln -s "$HF_LEROBOT_HOME/$HF_USER/my_dataset" "$HF_LEROBOT_HOME/$repo"
done
# `lerobot/smolvla_base` in the hub cache: a tiny SmolVLA (the recipe's from-scratch default).
lrhost "$recipes/smolvla.lua" dataset.repo_id=$HF_USER/my_dataset steps=1 batch_size=2 eval_batches=1 --device cpu \
  output_dir="$work/smolvla_base_run" > smolvla_base.log 2>&1 || { cat smolvla_base.log >&2; fail "tiny SmolVLA"; }
snapshot="$HF_HUB_CACHE/models--lerobot--smolvla_base/snapshots/0123abc"
mkdir -p "$(dirname "$snapshot")" "$HF_HUB_CACHE/models--lerobot--smolvla_base/refs"
cp -r "$work/smolvla_base_run/checkpoints/last/pretrained_model" "$snapshot"
printf 0123abc > "$HF_HUB_CACHE/models--lerobot--smolvla_base/refs/main"

# mapped NAME ARGS...: `lrhost lerobot-train ARGS... --dry-run` must be accepted; the printed lrhost
# line goes to NAME.line, everything to NAME.log.
mapped() {
  local name=$1
  shift
  lrhost lerobot-train "$@" --dry-run > "$name.log" 2>&1 || { cat "$name.log" >&2; fail "$name: refused"; }
  grep -A1 "lerobot-train maps to:" "$name.log" | tail -1 | sed 's/^ *//' > "$name.line"
}
# expect NAME REGEX...: each extended regex occurs in NAME's printed line.
expect() {
  local name=$1
  shift
  for pattern in "$@"; do grep -Eq -- "$pattern" "$name.line" || fail "$name: no '$pattern' in: $(cat "$name.line")"; done
}
show_batch() {  # show_batch NAME NPROC -> the planned effective batch
  local name=$1 nproc=$2 line recipe
  line=$(cat "$name.line")
  eval "set -- ${line#*lrhost }"
  recipe=$1
  shift
  local overrides=()
  for argument in "$@"; do case "$argument" in *=*) overrides+=("$argument");; esac; done
  lrhost show --nproc "$nproc" "$recipe" "${overrides[@]}" > "$name.show" 2>&1 || { cat "$name.show" >&2; fail "$name: show"; }
  grep -Eo "effective batch [0-9]+" "$name.show" | head -1 | grep -Eo "[0-9]+$"
}

# --- English guide (and Korean) -------------------------------------------------------------------
mapped en_multi_gpu --multi_gpu --num_processes=2 $(which lerobot-train) \
  --dataset.repo_id=${HF_USER}/my_dataset --policy.type=act --policy.repo_id=${HF_USER}/my_trained_policy \
  --output_dir=outputs/train/act_multi_gpu --job_name=act_multi_gpu --wandb.enable=true
expect en_multi_gpu "act_ddp.lua --nproc 2 --run-dir outputs/train/act_multi_gpu resume=false" \
  "dataset.repo_id=guide_user/my_dataset" "output_dir=outputs/train/act_multi_gpu"
grep -q "WARNING: --policy.repo_id=guide_user/my_trained_policy: NOT UPLOADED" en_multi_gpu.log || fail "no upload warning"
grep -q "hf upload guide_user/my_trained_policy outputs/train/act_multi_gpu/checkpoints/last/pretrained_model" \
  en_multi_gpu.log || fail "no upload command"

# After `accelerate config`: the bare launch, one process (a path for $(which lerobot-train) this time).
mapped en_bare /opt/venv/bin/lerobot-train --dataset.repo_id=${HF_USER}/my_dataset --policy.type=act \
  --policy.repo_id=${HF_USER}/my_trained_policy --output_dir=outputs/train/act_multi_gpu --job_name=act_multi_gpu \
  --wandb.enable=true
expect en_bare "act_ddp.lua --run-dir outputs/train/act_multi_gpu resume=false"
grep -q -- "--nproc" en_bare.line && fail "the bare launch started ranks: $(cat en_bare.line)"

# Linear LR scaling: lerobot-train ignores --optimizer.lr under the policy's preset, and so does lrhost, loudly.
mapped en_lr --num_processes=2 "$(which lerobot-train)" --optimizer.lr=2e-4 --dataset.repo_id=lerobot/pusht --policy=act
expect en_lr "act_ddp.lua --nproc 2 " "dataset.repo_id=lerobot/pusht"
grep -q "WARNING: --optimizer.lr=2e-4 HAS NO EFFECT" en_lr.log || fail "no warning for the ignored --optimizer.lr"
grep -q "optimizer" en_lr.line && fail "--optimizer.lr reached the recipe: $(cat en_lr.line)"

# Steps scaling: batch_size 8 per process, 16 in total.
mapped en_steps --num_processes=2 $(which lerobot-train) --batch_size=8 --steps=50000 \
  --dataset.repo_id=lerobot/pusht --policy=act
expect en_steps "act_ddp.lua --nproc 2 " "batch_size=8" "steps=50000"
[ "$(show_batch en_steps 2)" = 16 ] || fail "en_steps: effective batch $(show_batch en_steps 2), expected 16"

# The first command for real: 2 CPU ranks, a tiny ACT, a few steps.
tiny=(--policy.dim_model=64 --policy.dim_feedforward=128 --policy.n_encoder_layers=1 --policy.n_vae_encoder_layers=1
      --policy.chunk_size=10 --policy.n_action_steps=1 eval_batches=2)
lrhost lerobot-train --multi_gpu --num_processes=2 $(which lerobot-train) \
  --dataset.repo_id=${HF_USER}/my_dataset --policy.type=act --policy.repo_id=${HF_USER}/my_trained_policy \
  --output_dir=outputs/train/act_multi_gpu --job_name=act_multi_gpu --wandb.enable=true \
  --device cpu --batch_size=2 --steps=2 --save_freq=2 "${tiny[@]}" > en_run.log 2>&1 \
  || { cat en_run.log >&2; fail "the English guide's first command failed"; }
grep -q "effective batch 4 = batch_size 2 x 2 data-parallel rank(s)" en_run.log || fail "not 2 data-parallel ranks"
[ -f outputs/train/act_multi_gpu/checkpoints/000002/pretrained_model/model.safetensors ] || fail "no checkpoint"
grep -q "NOT UPLOADED" en_run.log || fail "the run did not warn that nothing is uploaded"

# --- Chinese quick start: dash-less arguments after the script path --------------------------------
script=src/lerobot/scripts/lerobot_train.py
mapped zh_first $script policy.pretrained_path=lerobot/smolvla_base dataset.repo_id=your-username/your-dataset \
  batch_size=16
expect zh_first "smolvla.lua --run-dir outputs/train/[0-9-]+/[0-9-]+_smolvla policy.pretrained_path=lerobot/smolvla_base resume=false" \
  "dataset.repo_id=your-username/your-dataset batch_size=16"
your_args=(policy.pretrained_path=lerobot/smolvla_base dataset.repo_id=your-username/your-dataset)
mapped zh_4 --num_processes=4 $script "${your_args[@]}"
expect zh_4 "smolvla.lua --nproc 4 "
mapped zh_2 --num_processes=2 $script "${your_args[@]}"
expect zh_2 "smolvla.lua --nproc 2 "
# CUDA_VISIBLE_DEVICES is the environment's: lrhost's ranks see those GPUs, as accelerate's do.
CUDA_VISIBLE_DEVICES=0,1 mapped zh_cvd2 --num_processes=2 $script "${your_args[@]}"
expect zh_cvd2 "smolvla.lua --nproc 2 "
CUDA_VISIBLE_DEVICES=2,3,4,5 mapped zh_cvd4 --num_processes=4 $script "${your_args[@]}"
expect zh_cvd4 "smolvla.lua --nproc 4 "
mapped zh_bf16 --num_processes=4 --mixed_precision=bf16 --multi_gpu $script "${your_args[@]}"
expect zh_bf16 "smolvla.lua --nproc 4 " "accelerator.mixed_precision=bf16"
mapped zh_fp16 --num_processes=4 --mixed_precision=fp16 --multi_gpu $script "${your_args[@]}"
expect zh_fp16 "smolvla.lua --nproc 4 " "accelerator.mixed_precision=fp16"
mapped zh_4gpu --num_processes=4 \
  $script \
  policy.pretrained_path=lerobot/smolvla_base \
  dataset.repo_id=christianwang-sjtu/so100-red-dustbin \
  batch_size=12 \
  output_dir=outputs/smolvla_4gpu
expect zh_4gpu "smolvla.lua --nproc 4 --run-dir outputs/smolvla_4gpu policy.pretrained_path=lerobot/smolvla_base resume=false" \
  "dataset.repo_id=christianwang-sjtu/so100-red-dustbin batch_size=12 output_dir=outputs/smolvla_4gpu"
[ "$(show_batch zh_4gpu 4)" = 48 ] || fail "zh_4gpu: effective batch $(show_batch zh_4gpu 4), expected 4 x 12 = 48"
mapped zh_4gpu_bf16 --num_processes=4 --mixed_precision=bf16 --multi_gpu \
  $script \
  policy.pretrained_path=lerobot/smolvla_base \
  dataset.repo_id=christianwang-sjtu/so100-red-dustbin \
  batch_size=12 \
  output_dir=outputs/smolvla_4gpu_bf16
expect zh_4gpu_bf16 "smolvla.lua --nproc 4 --run-dir outputs/smolvla_4gpu_bf16 " "accelerator.mixed_precision=bf16"

# The first command for real, in the same spelling: it fine-tunes the cached tiny `lerobot/smolvla_base`
# written above. lrhost overrides such as eval_batches=1 still pass through.
lrhost lerobot-train $script policy.pretrained_path=lerobot/smolvla_base \
  dataset.repo_id=your-username/your-dataset batch_size=16 steps=1 output_dir=outputs/smolvla_ft --device cpu \
  eval_batches=1 > zh_run.log 2>&1 || { cat zh_run.log >&2; fail "the Chinese guide's first command failed"; }
grep -q "fine-tuning smolvla from lerobot/smolvla_base" zh_run.log || fail "did not fine-tune the cached policy"
grep -q "effective batch 16 = batch_size 16 x 1 data-parallel rank(s)" zh_run.log || fail "batch_size=16 not used"
[ -f outputs/smolvla_ft/checkpoints/000001/pretrained_model/model.safetensors ] || fail "no fine-tuned checkpoint"

# --- TRL: `accelerate launch train.py` is another script; its batch rule on lerobot-train ----------
if lrhost lerobot-train train.py > trl_script.log 2>&1; then fail "train.py was accepted"; fi
grep -q "'train.py' is another training script than lerobot-train" trl_script.log || fail "$(cat trl_script.log)"
# batch = per-device batch x devices x accumulation: 1 x 32 x 1 = 1 x 4 x 8 = 8 x 4 x 1 = 32.
mapped trl_1x32 --policy=act --dataset.repo_id=lerobot/pusht --batch_size=32
mapped trl_1x4x8 --policy=act --dataset.repo_id=lerobot/pusht --batch_size=4 accelerator.gradient_accumulation_steps=8
mapped trl_8x4 --num_processes=8 --policy=act --dataset.repo_id=lerobot/pusht --batch_size=4
expect trl_8x4 "act_ddp.lua --nproc 8 "
for case in "trl_1x32 1" "trl_1x4x8 1" "trl_8x4 8"; do
  set -- $case
  [ "$(show_batch "$1" "$2")" = 32 ] || fail "$1: effective batch $(show_batch "$1" "$2"), expected 32"
done
# ... and the accumulating one trains so: one step of 8 micro-batches of 4.
lrhost lerobot-train --policy=act --dataset.repo_id=lerobot/pusht --batch_size=4 \
  accelerator.gradient_accumulation_steps=8 --steps=1 --output_dir=outputs/trl_accumulate --device cpu "${tiny[@]}" \
  > trl_run.log 2>&1 || { cat trl_run.log >&2; fail "the accumulating run failed"; }
grep -q "effective batch 32 = batch_size 4 x 1 data-parallel rank(s) x 8 accumulation step(s)" trl_run.log \
  || fail "$(grep -m1 'effective batch' trl_run.log)"
echo "ok: the guides' commands"
