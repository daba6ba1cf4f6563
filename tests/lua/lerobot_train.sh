#!/usr/bin/env bash
# `lrhost lerobot-train` end to end, as a LeRobot user switches: a dataset found by repo id where
# LeRobot keeps it ($HF_LEROBOT_HOME/user/push), a small ACT trained from lerobot-train's flags, then
# fine-tuned from its pretrained folder with policy fields typed on the command line (they must
# reach the optimizer, `lrhost show` and the saved config.json alike; a field that shapes the weights
# is refused), `rename_map` given as JSON, and a LeRobot-style flag on the normal path.
# Usage: lerobot_train.sh LRHOST WORK_DIR RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 recipes=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout 300 "$exe" "$@"; }
export HF_LEROBOT_HOME="$work/lerobot_home" OMP_NUM_THREADS=1
# lerobot-train's ACT and Diffusion start from torchvision's ImageNet backbone, read from the torch hub
# cache: a random stand-in written by torch.save (tests/lua/backbone_weights.sh checks the loading).
export TORCH_HOME="$work/torch_home"
"${LRHOST_PYTHON:-python3}" "$(dirname "$0")/fake_resnet18_pth.py" "$TORCH_HOME"
tiny=(--policy.dim_model=64 --policy.dim_feedforward=128 --policy.n_encoder_layers=1 --policy.n_vae_encoder_layers=1
      --policy.chunk_size=10 --policy.n_action_steps=1 eval_batches=2)

lrhost dataset synth --out "$HF_LEROBOT_HOME/user/push" > "$work/synth.log" 2>&1

# 1. From scratch: lerobot-train's flags; the printed lrhost line names what they became.
lrhost lerobot-train --policy.type=act --dataset.repo_id=user/push --batch_size=2 --steps=2 --save_freq=2 \
  --policy.device=cpu --output_dir="$work/act" --policy.push_to_hub=false --wandb.enable=true "${tiny[@]}" \
  > "$work/act.log" 2>&1 || { cat "$work/act.log" >&2; fail "lerobot-train from scratch failed"; }
grep -q "lerobot-train maps to:" "$work/act.log" || fail "the equivalent lrhost command was not printed"
grep -Eq "lrhost [^ ]*act_ddp.lua --device cpu --run-dir [^ ]*/act resume=false .*dataset.repo_id=user/push batch_size=2 steps=2" \
  "$work/act.log" || fail "the printed command does not carry the flags: $(grep -A1 'maps to' "$work/act.log")"
grep -q "wandb sync --sync-tensorboard" "$work/act.log" || fail "--wandb.enable=true did not say where metrics go"
pretrained="$work/act/checkpoints/000002/pretrained_model"
[ -f "$pretrained/model.safetensors" ] || fail "no checkpoint at step 2"

# accelerate's --num_processes: two CPU ranks through lrhost's launcher, data-parallel.
lrhost lerobot-train --num_processes=2 --policy.type=act --dataset.repo_id=user/push --batch_size=2 --steps=2 \
  --save_freq=2 --policy.device=cpu --output_dir="$work/act2" "${tiny[@]}" > "$work/act2.log" 2>&1 \
  || { cat "$work/act2.log" >&2; fail "lerobot-train with --num_processes=2 failed"; }
grep -Eq "lrhost [^ ]*act_ddp.lua --nproc 2 --device cpu" "$work/act2.log" || fail "--num_processes=2 did not become --nproc 2"
grep -q "effective batch 4 = batch_size 2 x 2 data-parallel rank(s)" "$work/act2.log" || fail "not two data-parallel ranks"
grep -q '"dp_world_size": 2' "$work/act2/checkpoints/000002/training_state/training_step.json" || fail "no 2-rank checkpoint"

# 2. Fine-tuning applies what was typed on top of the folder's config.json, never the recipe's defaults.
lrhost show --json "$recipes/act_ddp.lua" policy.pretrained_path="$pretrained" policy.optimizer_lr=0.5 \
  dataset.repo_id=user/push > "$work/show.json" 2> "$work/show.log" || { cat "$work/show.log" >&2; fail "show failed"; }
# The plan is the pretrained policy: its parameter count is the one the training run reported.
trained=$(grep -Eo "act: [0-9]+ parameters" "$work/act.log" | head -1 | grep -Eo "[0-9]+")
[ -n "$trained" ] || fail "the training run did not report its parameter count"
python3 - "$work/show.json" "$trained" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
policy = doc["config"]["policy"]
assert policy["optimizer_lr"] == 0.5, f"optimizer_lr {policy['optimizer_lr']} (the command line said 0.5)"
assert policy["dim_model"] == 64 and policy["chunk_size"] == 10, f"not the pretrained geometry: {policy}"
assert doc["memory_plan"]["parameters"] == int(sys.argv[2]), f"plan {doc['memory_plan']['parameters']} vs trained {sys.argv[2]}"
print("ok: show", policy["optimizer_lr"], policy["dim_model"], sys.argv[2])
PY
grep -q "from the command line: optimizer_lr" "$work/show.log" || fail "the log does not list the command line's fields"
if lrhost show "$recipes/act_ddp.lua" policy.pretrained_path="$pretrained" policy.chunk_size=30 > "$work/shape.log" 2>&1; then
  fail "changing chunk_size of a pretrained ACT was accepted"
fi
grep -q "policy.chunk_size = 30 cannot change when fine-tuning" "$work/shape.log" || fail "$(cat "$work/shape.log")"

lrhost lerobot-train --policy.path="$pretrained" --dataset.repo_id=user/push --policy.optimizer_lr=0.5 --steps=1 \
  --batch_size=2 --log_freq=1 --policy.device=cpu --output_dir="$work/ft" eval_batches=1 > "$work/ft.log" 2>&1 \
  || { cat "$work/ft.log" >&2; fail "fine-tuning through lerobot-train failed"; }
python3 - "$work/ft" <<'PY'
import json, sys
run = sys.argv[1]
config = json.load(open(f"{run}/checkpoints/000001/pretrained_model/config.json"))
assert config["optimizer_lr"] == 0.5 and config["dim_model"] == 64, config
lrs = [json.loads(line)["lr"] for line in open(f"{run}/metrics.jsonl") if '"lr"' in line]
assert lrs and all(lr == 0.5 for lr in lrs), f"trained with lr {lrs}, not 0.5"
print("ok: fine-tuned with lr", lrs)
PY

# --dataset.episodes picks the episodes (the last eval_episodes of them held out) and
# --save_checkpoint=false saves nothing.
lrhost lerobot-train --policy.type=act --dataset.repo_id=user/push --dataset.episodes='[0,1,2,3,4,5]' --steps=1 \
  --batch_size=2 --save_checkpoint=false --policy.device=cpu --output_dir="$work/episodes" eval_episodes=2 \
  "${tiny[@]}" > "$work/episodes.log" 2>&1 || { cat "$work/episodes.log" >&2; fail "--dataset.episodes run failed"; }
grep -Eq "train frames \(4 episodes\), 2 held-out episodes" "$work/episodes.log" || fail "episodes not used: $(grep parameters "$work/episodes.log")"
[ ! -e "$work/episodes/checkpoints" ] || fail "--save_checkpoint=false saved a checkpoint"
if lrhost lerobot-train --policy.type=act --dataset.repo_id=user/push --dataset.episodes='[0,0,1]' --steps=1 \
  --policy.device=cpu --output_dir="$work/twice" "${tiny[@]}" > "$work/twice.log" 2>&1; then fail "a repeated episode was accepted"; fi
grep -q "dataset.episodes lists episode 0 twice" "$work/twice.log" || fail "$(tail -3 "$work/twice.log")"
if lrhost lerobot-train --policy.type=act --dataset.repo_id=user/push --dataset.episodes='[0,9999]' --steps=1 \
  --policy.device=cpu --output_dir="$work/range" "${tiny[@]}" > "$work/range.log" 2>&1; then fail "episode 9999 was accepted"; fi
grep -q "dataset.episodes\[2\] = 9999: expected an episode index in \[0, " "$work/range.log" || fail "$(tail -3 "$work/range.log")"

# 3. rename_map on the command line is a map (an empty default used to read as a list).
lrhost show --json "$recipes/smolvla.lua" 'rename_map={"observation.images.top": "observation.images.camera1"}' \
  > "$work/rename.json" 2> "$work/rename.log" || { cat "$work/rename.log" >&2; fail "rename_map was refused"; }
python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["config"]["rename_map"]; assert m == {"observation.images.top": "observation.images.camera1"}, m' "$work/rename.json"

# 4. A command line that leaves a field out trains lerobot-train's default, not the shipped recipe's
#    (the front door's list of where the recipes differ must stay complete).
for type in act diffusion; do
  lrhost lerobot-train --policy.type=$type --dry-run > /dev/null 2> "$work/dry_$type.log"
  line=$(grep -A1 "maps to:" "$work/dry_$type.log" | tail -1)
  eval "set -- ${line#*lrhost }"  # the printed line is shell-quoted
  recipe=$1; shift
  overrides=()
  for argument in "$@"; do case "$argument" in *=*) overrides+=("$argument");; esac; done
  lrhost show --json "$recipe" "${overrides[@]}" > "$work/dry_$type.json" 2> "$work/dry_$type.show.log" \
    || { cat "$work/dry_$type.show.log" >&2; fail "show of the $type front-door line failed"; }
  lrhost "$(dirname "$0")/cases/policy_defaults.lua" type=$type > "$work/defaults_$type.json" 2>/dev/null
  python3 - "$work/dry_$type.json" "$work/defaults_$type.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))["config"]
defaults = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
differ = {k: (config["policy"].get(k), v) for k, v in defaults.items() if config["policy"].get(k) != v}
assert not differ, f"fields that are not lerobot-train's defaults (recipe, LeRobot): {differ}"
loop = {k: config[k] for k in ("steps", "log_freq", "save_freq", "batch_size", "seed")}
assert loop == {"steps": 100000, "log_freq": 200, "save_freq": 20000, "batch_size": 8, "seed": 1000}, loop
print("ok: lerobot-train defaults", config["policy"]["type"])
PY
done

# 4b. The front door's list of the fields where a shipped recipe differs from LeRobot (each spec's
#     deviating_fields and lerobot_values) is exactly where `lrhost show` finds the recipe differing:
#     a field missing from the list would train the recipe's tiny value, a field listed in vain would
#     hide a drift. Every type lerobot-train maps.
for type in act diffusion smolvla pi0 pi05 groot; do
  lrhost lerobot-train --policy.type=$type --dry-run > /dev/null 2> "$work/list_$type.log"
  line=$(grep -A1 "maps to:" "$work/list_$type.log" | tail -1)
  eval "set -- ${line#*lrhost }"
  recipe=$1; shift
  listed=()
  for argument in "$@"; do case "$argument" in policy.*=*) listed+=("$argument");; esac; done
  lrhost show --json "$recipe" > "$work/recipe_$type.json" 2> "$work/recipe_$type.log" \
    || { cat "$work/recipe_$type.log" >&2; fail "show of $recipe failed"; }
  lrhost "$(dirname "$0")/cases/policy_defaults.lua" type=$type > "$work/lerobot_$type.json" 2>/dev/null
  python3 - "$work/recipe_$type.json" "$work/lerobot_$type.json" "${listed[@]}" <<'PY'
import json, sys
policy = json.load(open(sys.argv[1]))["config"]["policy"]
defaults = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
def value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text  # strings are typed bare
typed = {a[len("policy."):a.index("=")]: value(a[a.index("=") + 1:]) for a in sys.argv[3:]}
# The front door resets a deviating field to lrhost's LeRobot default (deviating_fields), or gives a
# value lrhost's config leaves null (lerobot_values: ACT's ImageNet backbone), which is not a default.
listed = {k for k, v in typed.items() if v == defaults.get(k)}
# pretrained_path: "" in a recipe (a Lua table cannot hold null) is LeRobot's None.
differ = {k for k, v in defaults.items() if k != "pretrained_path" and policy.get(k) != v}
assert differ == listed, f"{policy['type']}: recipe differs from LeRobot in {sorted(differ)}, the front door lists {sorted(listed)}"
print("ok: deviation list", policy["type"], sorted(listed))
PY
done

# 5. A LeRobot-style flag on the normal path, and a dataset that is not on this machine.
set +e
lrhost "$recipes/act_ddp.lua" --batch_size=4 > "$work/hint.log" 2>&1; code=$?
lrhost show "$recipes/act_ddp.lua" dataset.repo_id=user/absent > "$work/absent.log" 2>&1; absent=$?
set -e
[ "$code" -eq 2 ] || fail "--batch_size=4 exited $code, expected 2"
grep -q "without dashes: batch_size=4" "$work/hint.log" || fail "no key=value hint: $(cat "$work/hint.log")"
grep -q "lrhost lerobot-train --batch_size=4" "$work/hint.log" || fail "no front-door hint"
[ "$absent" -ne 0 ] || fail "a missing dataset repo id was accepted"
grep -q "searched $HF_LEROBOT_HOME/user/absent" "$work/absent.log" || fail "$(cat "$work/absent.log")"
grep -q "hf download user/absent --repo-type dataset" "$work/absent.log" || fail "no download command named"
echo "ok: lerobot-train front door"
