#!/usr/bin/env bash
# ACT's backbone as lerobot-train gives it: LeRobot's default pretrained_backbone_weights
# (ResNet18_Weights.IMAGENET1K_V1) read from the torch hub cache, here a random resnet18 state_dict
# that Python's torch.save wrote (fake_resnet18_pth.py); the trained checkpoint's backbone must equal
# the file's tensors (backbone lr 0, frozen batch norms). Also: the same name on the recipe, a missing
# file (the error names the path and the fix), a legacy file, an explicit null (random, no file
# needed), and fine-tuning a pretrained folder (no file needed: the folder's weights win).
# Usage: backbone_weights.sh LRHOST WORK_DIR RECIPES_DIR PYTHON
set -euo pipefail
exe=$1 work=$2 recipes=$3 python=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work/empty_torch_home"
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout 300 "$exe" "$@"; }
export HF_LEROBOT_HOME="$work/lerobot_home" OMP_NUM_THREADS=1 TORCH_HOME="$work/torch_home"
"$python" "$here/fake_resnet18_pth.py" "$TORCH_HOME"
tiny=(--policy.dim_model=64 --policy.dim_feedforward=128 --policy.n_encoder_layers=1 --policy.n_vae_encoder_layers=1
      --policy.chunk_size=10 --policy.n_action_steps=1 eval_batches=1 --batch_size=2 --policy.device=cpu
      --dataset.repo_id=user/push)
lrhost dataset synth --out "$HF_LEROBOT_HOME/user/push" > "$work/synth.log" 2>&1

# 1. The front door's default is LeRobot's: the checkpoint's trunk is the file's, tensor for tensor.
lrhost lerobot-train --policy.type=act --steps=1 --save_freq=1 --output_dir="$work/act" \
  --policy.optimizer_lr_backbone=0 "${tiny[@]}" > "$work/act.log" 2>&1 || { cat "$work/act.log" >&2; fail "front door"; }
grep -q "policy.pretrained_backbone_weights=ResNet18_Weights.IMAGENET1K_V1" "$work/act.log" \
  || fail "the printed line does not pass LeRobot's backbone weights"
pretrained="$work/act/checkpoints/000001/pretrained_model"
"$python" - "$TORCH_HOME/hub/checkpoints/resnet18-f37072fd.pth" "$pretrained" <<'PY'
import json, struct, sys
import torch
expected = torch.load(sys.argv[1], weights_only=True)
data = open(f"{sys.argv[2]}/model.safetensors", "rb").read()
size = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + size])
def tensor(key):
    entry = header[key]
    begin, end = entry["data_offsets"]
    assert entry["dtype"] == "F32", entry
    return torch.frombuffer(bytearray(data[8 + size + begin:8 + size + end]), dtype=torch.float32).reshape(entry["shape"])
keys = [k for k in header if k.startswith("model.backbone.")]
assert len(keys) == 100, len(keys)  # 20 convs + 20 frozen norms x 4 (no num_batches_tracked)
for key in keys:
    source = expected[key[len("model.backbone."):]]
    assert torch.equal(tensor(key), source), f"{key} differs from the .pth file"
assert json.load(open(f"{sys.argv[2]}/config.json"))["pretrained_backbone_weights"] == "ResNet18_Weights.IMAGENET1K_V1"
print("ok: trained backbone == torch.save file,", len(keys), "tensors")
PY

# 2. The same name on the recipe is a known key.
lrhost show "$recipes/act_ddp.lua" policy.pretrained_backbone_weights=ResNet18_Weights.IMAGENET1K_V1 \
  dataset.repo_id=user/push > "$work/show.log" 2>&1 || { cat "$work/show.log" >&2; fail "the recipe refused the name"; }

# 3. No file where the torch hub keeps it: the error names the path searched and the fix.
if TORCH_HOME="$work/empty_torch_home" lrhost lerobot-train --policy.type=act --steps=1 --output_dir="$work/missing" \
  "${tiny[@]}" > "$work/missing.log" 2>&1; then fail "trained without the backbone file"; fi
grep -q "no '$work/empty_torch_home/hub/checkpoints/resnet18-f37072fd.pth'" "$work/missing.log" || fail "$(tail -5 "$work/missing.log")"
grep -q "torchvision.models.resnet18(weights='IMAGENET1K_V1')" "$work/missing.log" || fail "no way to get the file named"
grep -q "policy.pretrained_backbone_weights=null" "$work/missing.log" || fail "the random-backbone choice is not named"

# 4. The legacy (pre-1.6) format is refused with how to convert it.
"$python" "$here/fake_resnet18_pth.py" "$work/legacy_torch_home" --legacy
if TORCH_HOME="$work/legacy_torch_home" lrhost lerobot-train --policy.type=act --steps=1 --output_dir="$work/legacy" \
  "${tiny[@]}" > "$work/legacy.log" 2>&1; then fail "a legacy .pth was accepted"; fi
grep -q "legacy (pre-PyTorch-1.6, non-zip) format" "$work/legacy.log" || fail "$(tail -5 "$work/legacy.log")"

# 5. An explicit null trains a random backbone without the file; fine-tuning needs no file either.
TORCH_HOME="$work/empty_torch_home" lrhost lerobot-train --policy.type=act --steps=1 --save_freq=1 \
  --output_dir="$work/null" --policy.pretrained_backbone_weights=null "${tiny[@]}" > "$work/null.log" 2>&1 \
  || { cat "$work/null.log" >&2; fail "an explicit null did not train"; }
grep -q '"pretrained_backbone_weights": null' "$work/null/checkpoints/000001/pretrained_model/config.json" \
  || fail "config.json does not record null"
TORCH_HOME="$work/empty_torch_home" lrhost lerobot-train --policy.path="$pretrained" --dataset.repo_id=user/push \
  --steps=1 --batch_size=2 --policy.device=cpu --output_dir="$work/ft" eval_batches=1 > "$work/ft.log" 2>&1 \
  || { cat "$work/ft.log" >&2; fail "fine-tuning asked for the backbone file"; }
echo "ok: backbone weights"
