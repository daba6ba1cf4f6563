#!/usr/bin/env bash
# Held-out episodes (policy_training.lua's split_episodes, docs/recipe_api.md "eval_episodes"): the
# front door trains on every episode given, as lerobot-train does, and skips the held-out evaluation
# with a line saying so; a recipe holds out at most half of a small dataset with a warning instead of
# training on one episode or refusing it; min_gain without held-out episodes is refused.
# Usage: eval_holdout.sh LRHOST WORK_DIR RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 recipes=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout 120 "$exe" "$@"; }
export HF_LEROBOT_HOME="$work/lerobot_home" OMP_NUM_THREADS=1
# lerobot-train's ACT starts from torchvision's ImageNet backbone, read from the torch hub cache: a
# random stand-in written by torch.save (tests/lua/backbone_weights.sh checks the loading).
mkdir -p "$work"
export TORCH_HOME="$work/torch_home"
"${LRHOST_PYTHON:-python3}" "$(dirname "$0")/fake_resnet18_pth.py" "$TORCH_HOME"
lrhost dataset synth --out "$HF_LEROBOT_HOME/user/push" --episodes 6 --max-length 12 > "$work/synth.log" 2>&1 ||
  { cat "$work/synth.log" >&2; fail "dataset synth failed"; }
tiny=(policy.dim_model=32 policy.dim_feedforward=64 policy.n_encoder_layers=1 policy.n_vae_encoder_layers=1
      policy.chunk_size=4 policy.n_action_steps=1 steps=1 batch_size=2 num_workers=1 eval_batches=1
      save_checkpoint=false dataset.repo_id=user/push)

# 1. The front door: five episodes listed, five trained on, nothing held out.
lrhost lerobot-train --policy.type=act --dataset.repo_id=user/push --dataset.episodes='[0,1,2,3,4]' --steps=1 \
  --batch_size=2 --save_checkpoint=false --policy.device=cpu --output_dir="$work/front" --num_workers=1 \
  --policy.dim_model=32 --policy.dim_feedforward=64 --policy.n_encoder_layers=1 --policy.n_vae_encoder_layers=1 \
  --policy.chunk_size=4 --policy.n_action_steps=1 > "$work/front.log" 2>&1 ||
  { cat "$work/front.log" >&2; fail "the front door run failed"; }
grep -q "train frames (5 episodes), 0 held-out episodes" "$work/front.log" ||
  fail "the front door did not train on all five episodes: $(grep parameters "$work/front.log")"
grep -q "no held-out episodes (eval_episodes = 0): the held-out action-MSE evaluation is skipped" "$work/front.log" ||
  fail "no line saying the held-out evaluation is skipped: $(tail -5 "$work/front.log")"
grep -q "held-out action MSE over" "$work/front.log" && fail "the front door evaluated held-out episodes"

# 2. A recipe on three episodes with the default eval_episodes = 4: warned, one held out, two trained.
lrhost "$recipes/act_ddp.lua" --device cpu --run-dir "$work/three" "${tiny[@]}" 'dataset.episodes=[0,1,2]' \
  > "$work/three.log" 2>&1 || { cat "$work/three.log" >&2; fail "three episodes were refused"; }
grep -q "warn.*eval_episodes = 4 asks for more than half of the 3 episode(s) of the dataset: holding out only the last 1 and training on 2" \
  "$work/three.log" || fail "no warning about the held-out share: $(grep -i eval_episodes "$work/three.log")"
grep -q "train frames (2 episodes), 1 held-out episodes" "$work/three.log" || fail "$(grep parameters "$work/three.log")"
grep -q "held-out action MSE over 1 episodes" "$work/three.log" || fail "the held-out evaluation did not run"

# 3. One episode: nothing can be held out; it trains on it and says the evaluation is skipped.
lrhost "$recipes/act_ddp.lua" --device cpu --run-dir "$work/one" "${tiny[@]}" 'dataset.episodes=[3]' \
  > "$work/one.log" 2>&1 || { cat "$work/one.log" >&2; fail "one episode was refused"; }
grep -q "holding out none and skipping the held-out evaluation (training on the 1)" "$work/one.log" ||
  fail "no warning for one episode: $(grep -i eval_episodes "$work/one.log")"
grep -q "the held-out action-MSE evaluation is skipped" "$work/one.log" || fail "no skip line for one episode"

# 4. min_gain asks for an evaluation that cannot run.
if lrhost "$recipes/act_ddp.lua" --device cpu --run-dir "$work/gain" "${tiny[@]}" eval_episodes=0 min_gain=1.5 \
  > "$work/gain.log" 2>&1; then fail "min_gain without held-out episodes was accepted"; fi
grep -q "min_gain = 1.5 needs held-out episodes to evaluate, and none are held out (eval_episodes = 0, 6 episodes)" \
  "$work/gain.log" || fail "unclear min_gain error: $(tail -3 "$work/gain.log")"
echo "ok: held-out episodes"
