#!/usr/bin/env bash
# A pretrained folder whose config.json has empty input_features and output_features ({}), as LeRobot's
# own default PI05Config()/PI0Config()/ACTConfig()/DiffusionConfig() write it: the features come from the
# dataset, as LeRobot's make_policy fills them, for `lrhost show` (which crashed with SIGSEGV on pi0/pi05)
# and for training through the recipe (a tiny pi05 saved after 1 step, its config.json's features emptied,
# fine-tuned 1 step on the dataset's features). No call may crash (exit 139).
# Usage: empty_features.sh LRHOST WORK_DIR FIXTURES_DIR RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 fixtures=$3 recipes=$4
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { # run LOG ARGS...: one lrhost call, killed after 300 s; fails on any non-zero exit
  local log=$1 code=0
  shift
  timeout 300 "$exe" "$@" > "$log" 2>&1 || code=$?
  [ "$code" != 139 ] || fail "lrhost $* crashed (SIGSEGV)"
  [ "$code" = 0 ] || { tail -n 20 "$log" >&2; fail "lrhost $* exited $code"; }
}
# LeRobot's default configs (features {}), from the fixtures LeRobot wrote.
python3 - "$fixtures/policies" "$work" <<'PY'
import json, os, sys
src, out = sys.argv[1:]
for policy, fixture in [("pi05", "pi05_config_defaults"), ("pi0", "pi0_config_defaults"), ("act", "act_ref"),
                        ("diffusion", "diffusion_ref_head_defaults")]:
    config = {"type": policy, **json.load(open(f"{src}/{fixture}.json"))["config"]}
    config["input_features"], config["output_features"] = {}, {}
    os.makedirs(f"{out}/{policy}")
    json.dump(config, open(f"{out}/{policy}/config.json", "w"), indent=4)
PY
for case in pi05:pi05.lua pi0:pi0.lua act:act_ddp.lua diffusion:diffusion_ddp.lua; do
  policy=${case%%:*} recipe=${case#*:}
  run "$work/show_$policy.log" show --json "$recipes/$recipe" policy.pretrained_path="$work/$policy"
  grep -q "config.json: no input_features; taken from the dataset" "$work/show_$policy.log" \
    || fail "$policy: the features were not taken from the dataset"
  grep -q '"parameters":' "$work/show_$policy.log" || fail "$policy: show printed no memory plan"
done

# Training through the recipe on a tiny pi05 whose config.json lost its features.
tiny=(batch_size=2 steps=1 save_freq=1 log_freq=1 eval_batches=1 num_workers=1)
run "$work/train.log" --device cpu "$recipes/pi05.lua" output_dir="$work/tiny" "${tiny[@]}"
pretrained="$work/tiny/checkpoints/000001/pretrained_model"
python3 - "$pretrained/config.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
assert config["input_features"] and config["output_features"], "the trained folder has no features to remove"
config["input_features"], config["output_features"] = {}, {}
json.dump(config, open(sys.argv[1], "w"), indent=4)
PY
run "$work/finetune.log" --device cpu "$recipes/pi05.lua" output_dir="$work/finetune" \
  policy.pretrained_path="$pretrained" "${tiny[@]}"
grep -q "config.json: no input_features; taken from the dataset" "$work/finetune.log" || fail "fine-tuning did not fill the features"
saved="$work/finetune/checkpoints/000001/pretrained_model/config.json"
python3 - "$saved" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
cameras = [k for k, f in config["input_features"].items() if f["type"] == "VISUAL"]
assert cameras and "action" in config["output_features"], f"saved features {config['input_features']} {config['output_features']}"
print("ok: fine-tuned on the dataset's features", cameras)
PY
echo "ok: empty features come from the dataset"
