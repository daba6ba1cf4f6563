#!/usr/bin/env bash
# `lrhost resume` of every shipped recipe's run, from another working directory, after the clone
# moved: runs train from a copy of recipes/ (cloneA, found through LRHOST_RECIPES_LIB as an installed
# lrhost's would be), the copy is then moved to cloneB, and each run resumes from the recipe copy in
# its checkpoint. Nothing the run wrote may name cloneA: SmolVLA's tiny VLM is "lrhost/smolvla_tiny_vlm".
# Usage: shipped_resume.sh LRHOST WORK_DIR SOURCE_RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 source=$3
rm -rf "$work"
mkdir -p "$work/other_cwd"
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout 300 "$exe" "$@"; }
export OMP_NUM_THREADS=1
cp -r "$source" "$work/cloneA"
declare -A tiny=(
  [act_ddp]="policy.dim_model=64 policy.dim_feedforward=128 policy.n_encoder_layers=1 policy.n_vae_encoder_layers=1 eval_batches=1"
  [diffusion_ddp]="policy.down_dims=[64,128] policy.diffusion_step_embed_dim=32 policy.noise_scheduler_type=DDIM policy.num_inference_steps=2 eval_batches=1"
  [smolvla]="eval_batches=1"
)
for recipe in act_ddp diffusion_ddp smolvla; do
  # shellcheck disable=SC2086
  LRHOST_RECIPES_LIB="$work/cloneA/lib" lrhost "$work/cloneA/$recipe.lua" --device cpu \
    --run-dir "$work/$recipe.run" steps=2 save_freq=2 batch_size=2 \
    output_dir="$work/$recipe" ${tiny[$recipe]} > "$work/$recipe.log" 2>&1 || { cat "$work/$recipe.log" >&2; fail "$recipe did not train"; }
done
if grep -rl "$work/cloneA" "$work"/*/checkpoints/000002/pretrained_model/config.json; then
  fail "a pretrained config.json names the clone's path"
fi
grep -q '"vlm_model_name": "lrhost/smolvla_tiny_vlm"' "$work/smolvla/checkpoints/000002/pretrained_model/config.json" \
  || fail "SmolVLA's config.json does not name the shipped VLM portably"
mv "$work/cloneA" "$work/cloneB"
cd "$work/other_cwd"
for recipe in act_ddp diffusion_ddp smolvla; do
  LRHOST_RECIPES_LIB="$work/cloneB/lib" lrhost resume --device cpu "$work/$recipe" steps=3 > "$work/$recipe.resume.log" 2>&1 \
    || { cat "$work/$recipe.resume.log" >&2; fail "lrhost resume of $recipe failed"; }
  grep -q "resume: restored step 2" "$work/$recipe.resume.log" || fail "$recipe did not resume from step 2"
  [ -f "$work/$recipe/checkpoints/000003/pretrained_model/model.safetensors" ] || fail "$recipe saved no step 3"
done
[ -z "$(ls "$work/other_cwd")" ] || fail "resume wrote into the working directory: $(ls "$work/other_cwd")"
echo "ok: every shipped recipe resumed after the clone moved"
