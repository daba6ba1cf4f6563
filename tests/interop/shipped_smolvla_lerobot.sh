#!/usr/bin/env bash
# The shipped SmolVLA recipe's run loads in LeRobot 0.6.1 with no extra step: its config.json names
# the tiny VLM "lrhost/smolvla_tiny_vlm", which lrhost installs into the local Hugging Face hub cache
# the first time it uses it (models--lrhost--smolvla_tiny_vlm, refs/main), so LeRobot's
# SmolVLAPolicy.from_pretrained and its processors resolve the same id offline.
# Usage: shipped_smolvla_lerobot.sh LRHOST WORK_DIR RECIPES_DIR. Exits 77 without the oracle.
set -euo pipefail
exe=$1 work=$2 recipes=$3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="$("$here/../../scripts/setup-interop" --python)" || exit 77
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
# An empty hub cache of the test's own (the user's is $HF_HOME/hub or ~/.cache/huggingface/hub), and
# no network: LeRobot must find everything in it.
export HF_HUB_CACHE="$work/hub" HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 PYTHONWARNINGS=ignore
timeout 300 "$exe" "$recipes/smolvla.lua" --device cpu --run-dir "$work/run" steps=1 batch_size=2 eval_batches=1 \
  output_dir="$work/out" > "$work/train.log" 2>&1 || { cat "$work/train.log" >&2; fail "the shipped SmolVLA recipe did not train"; }
grep -q "installed lrhost/smolvla_tiny_vlm into the Hugging Face cache" "$work/train.log" || fail "no line naming the install"
[ -s "$HF_HUB_CACHE/models--lrhost--smolvla_tiny_vlm/refs/main" ] || fail "no refs/main in the cache"
folder="$work/out/checkpoints/last/pretrained_model"
grep -q '"vlm_model_name": "lrhost/smolvla_tiny_vlm"' "$folder/config.json" || fail "config.json does not name the shipped VLM"
timeout 300 "$py" - "$folder" <<'PY' || fail "LeRobot could not load the folder lrhost wrote"
import sys
from lerobot.policies.factory import make_pre_post_processors
from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

policy = SmolVLAPolicy.from_pretrained(sys.argv[1], strict=True)
pre, post = make_pre_post_processors(policy.config, pretrained_path=sys.argv[1])
assert policy.config.vlm_model_name == "lrhost/smolvla_tiny_vlm", policy.config.vlm_model_name
names = [type(step).__name__ for step in pre.steps]
assert "TokenizerProcessorStep" in names, names
print(f"LeRobot loaded {sys.argv[1]} (VLM {policy.config.vlm_model_name}) with processors {names}")
PY
echo "ok: LeRobot loads the shipped SmolVLA run offline"
