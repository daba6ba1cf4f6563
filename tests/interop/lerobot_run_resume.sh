#!/usr/bin/env bash
# `lrhost resume` of a run written by LeRobot's own `lerobot-train` (LeRobot 0.6.1, the oracle of
# scripts/setup-interop): a small ACT trained 2 steps on lrhost's built-in dataset, checkpointed by
# LeRobot; lrhost maps its train_config.json and config.json onto recipes/act_ddp.lua, restores the
# weights (strict), optimizer and RNG, says what it cannot restore, and trains on to step 4.
# Usage: lerobot_run_resume.sh LRHOST_EXE WORK_DIR. Exits 77 (skip) without the oracle.
set -euo pipefail
lrhost="${1:?lrhost executable}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# The oracle's python (its own venv); prints why on stderr and skips when it is not installed.
py="$("$repo/scripts/setup-interop" --python)" || exit 77
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1 PYTHONWARNINGS=ignore HF_HUB_OFFLINE=1
fail() { echo "FAIL: $*" >&2; exit 1; }

"$lrhost" dataset synth --out "$work/data" > /dev/null
# One lerobot-train command line, run by LeRobot and (below) by `lrhost lerobot-train`.
flags=(--dataset.repo_id=local/push --dataset.root="$work/data" --dataset.video_backend=pyav
  --policy.type=act --policy.device=cpu --policy.push_to_hub=false --policy.pretrained_backbone_weights=null
  --policy.dim_model=64 --policy.dim_feedforward=128 --policy.n_encoder_layers=1 --policy.n_vae_encoder_layers=1
  --policy.chunk_size=20 --policy.n_action_steps=20 --steps=2 --save_freq=2 --log_freq=1 --batch_size=2
  --num_workers=0 --env_eval_freq=0 --wandb.enable=false)
timeout 600 "$py" "$here/lerobot_train.py" "${flags[@]}" --output_dir="$work/lerobot_run" > "$work/lerobot.log" 2>&1 ||
  { tail -30 "$work/lerobot.log"; fail "lerobot-train failed"; }
[ -f "$work/lerobot_run/checkpoints/000002/training_state/optimizer_state.safetensors" ] ||
  fail "lerobot-train wrote no checkpoint"

timeout 300 "$lrhost" resume --nproc 2 --device cpu --run-dir "$work/resume" "$work/lerobot_run" steps=4 \
  eval_batches=1 > "$work/resume.log" 2>&1 || { tail -30 "$work/resume.log"; fail "lrhost resume failed"; }
cat "$work/resume.log"
grep -q "resuming .*recipes/act_ddp.lua from .*lerobot_run/checkpoints/000002" "$work/resume.log" ||
  fail "not resumed with the shipped ACT recipe"
grep -q "warning: LeRobot's Python and NumPy random states" "$work/resume.log" || fail "no warning about the RNG"
grep -q "resume: restored step 2 from" "$work/resume.log" || fail "step 2 not restored"
grep -q "checkpoint: saved step 4" "$work/resume.log" || fail "the resumed run did not train to step 4"
grep -q '"dim_model": 64' "$work/lerobot_run/checkpoints/000004/pretrained_model/config.json" ||
  fail "the LeRobot run's policy config (dim_model 64) was not carried over"
echo "lerobot-train run resumed by lrhost: ok"

# The same command line through lrhost's front door: the policy LeRobot built, field for field, and
# the same loop settings (both train on every episode: the front door sets eval_episodes=0).
timeout 300 "$lrhost" lerobot-train "${flags[@]}" --output_dir="$work/front_door" eval_batches=1 \
  > "$work/front_door.log" 2>&1 || { tail -30 "$work/front_door.log"; fail "lrhost lerobot-train failed"; }
"$py" - "$work/lerobot_run/checkpoints/000002/pretrained_model" "$work/front_door/checkpoints/000002/pretrained_model" <<'PY'
import json, sys
lerobot, lrhost = (json.load(open(f"{d}/config.json")) for d in sys.argv[1:3])
# "device": LeRobot records the device it ran on; lrhost leaves it null (chosen at run time, --device).
differ = {k: (v, lrhost.get(k, "<absent>")) for k, v in lerobot.items()
          if lrhost.get(k, "<absent>") != v and k != "device"}
assert not differ, f"config.json fields that differ (LeRobot, lrhost): {differ}"
assert set(lrhost) == set(lerobot), f"fields only lrhost writes: {set(lrhost) - set(lerobot)}"
train_lerobot, train_lrhost = (json.load(open(f"{d}/train_config.json")) for d in sys.argv[1:3])
for key in ("steps", "batch_size", "seed", "log_freq", "save_freq"):
    assert train_lerobot[key] == train_lrhost[key], f"{key}: LeRobot {train_lerobot[key]}, lrhost {train_lrhost[key]}"
print(f"lrhost lerobot-train built LeRobot's policy config ({len(lerobot)} fields) and loop: ok")
PY
