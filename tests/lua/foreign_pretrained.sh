#!/usr/bin/env bash
# A policy folder or checkpoint the recipe cannot use says what it is and what to do, instead of
# failing deep inside (a key check offering strict = false, a geometry check of a model never meant):
#   an ACT folder as the pi05 recipe's policy.pretrained_path, and a pi05 folder for the ACT recipe:
#     which type the folder holds, which the recipe trains, and the recipe that trains the folder's;
#   the pi05 recipe resuming an output_dir of ACT checkpoints: the same, for resume;
#   a tiny pi05 folder whose geometry.json was deleted: that the file is missing and what it holds.
# Usage: foreign_pretrained.sh LRHOST WORK_DIR RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 recipes=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout 120 "$exe" "$@"; }
export OMP_NUM_THREADS=1 LRHOST_CACHE="$work/cache"
common=(batch_size=2 steps=2 save_freq=2 eval_batches=2)
lrhost "$recipes/act_ddp.lua" --device cpu --run-dir "$work/run_act" output_dir="$work/act" "${common[@]}" \
  policy.dim_model=64 policy.dim_feedforward=128 policy.n_encoder_layers=1 policy.n_vae_encoder_layers=1 \
  policy.chunk_size=10 policy.n_action_steps=1 > "$work/act.log" 2>&1 || { cat "$work/act.log" >&2; fail "tiny ACT"; }
lrhost "$recipes/pi05.lua" --device cpu --run-dir "$work/run_pi" output_dir="$work/pi" "${common[@]}" \
  > "$work/pi.log" 2>&1 || { cat "$work/pi.log" >&2; fail "tiny pi05"; }
act="$work/act/checkpoints/000002/pretrained_model" pi="$work/pi/checkpoints/000002/pretrained_model"

expect() {  # expect NAME REGEX lrhost-arguments...: fails with the message matching REGEX
  local name=$1 regex=$2; shift 2
  if lrhost "$@" > "$work/$name.log" 2>&1; then fail "$name: succeeded"; fi
  grep -Ezq "$regex" "$work/$name.log" || { cat "$work/$name.log" >&2; fail "$name: no match for '$regex'"; }
  grep -q "strict = false" "$work/$name.log" && fail "$name: still offers strict = false"
  return 0
}
expect act_into_pi05 "is a 'act' policy .*, and this recipe trains 'pi05'.*hint: recipes/act_ddp.lua trains 'act'" \
  show "$recipes/pi05.lua" policy.pretrained_path="$act"
expect pi05_into_act "is a 'pi05' policy .*, and this recipe trains 'act'.*hint: recipes/pi05.lua trains 'pi05'" \
  show "$recipes/act_ddp.lua" policy.pretrained_path="$pi"
expect resume_act_as_pi05 \
  "000002 holds a 'act' policy .*, and this recipe trains 'pi05'.*hint: recipes/act_ddp.lua trains 'act'.*output_dir without" \
  "$recipes/pi05.lua" --device cpu --run-dir "$work/run_resume" output_dir="$work/act" steps=3
cp -r "$pi" "$work/no_geometry"
rm "$work/no_geometry/geometry.json"
expect missing_geometry "no_geometry/geometry.json is missing, so the 'pi05' policy was built at LeRobot's geometry.*hint: .*holds geometry.json next to config.json: the VLM, action expert and vision tower sizes" \
  "$recipes/pi05.lua" --device cpu --run-dir "$work/run_geometry" policy.pretrained_path="$work/no_geometry" steps=1
echo "ok: foreign folders and checkpoints, and a missing geometry.json, say what they are"
