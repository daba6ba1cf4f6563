#!/usr/bin/env bash
# LoRA on GR00T through the shipped recipe (tiny geometry, CPU): LeRobot has no default GR00T targets, so
# adapters without policy.peft.target_modules are refused naming the flag; with the user's targets (the DiT's
# attention q / v) a pretrained folder from a 1-step run trains adapters in one process and sharded on 2 FSDP
# ranks, the checkpoint's pretrained_model/ being PEFT's adapter folder (adapter_model.safetensors holding only
# the targets' lora_A / lora_B, adapter_config.json naming them) that fine-tunes again as a base.
# Usage: groot_lora.sh LRHOST WORK_DIR RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 recipes=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { # run LOG ARGS...: one lrhost call, killed after 300 s
  local log=$1
  shift
  timeout 300 "$exe" "$@" > "$log" 2>&1 || { tail -n 30 "$log" >&2; fail "lrhost $*"; }
}
export OMP_NUM_THREADS=1
common=(--device cpu save_freq=2 eval_batches=1 batch_size=2)
run "$work/base.log" "$recipes/groot.lua" "${common[@]}" output_dir="$work/base" steps=1 save_freq=1
base="$work/base/checkpoints/000001/pretrained_model"
targets='policy.peft.target_modules=.*action_head\.model\.transformer_blocks\.\d+\.attn1\.to_(q|v)'

if timeout 300 "$exe" "$recipes/groot.lua" "${common[@]}" output_dir="$work/none" steps=1 policy.pretrained_path="$base" \
  policy.peft.method_type=LORA > "$work/none.log" 2>&1; then fail "LoRA without targets trained"; fi
grep -q "LeRobot has no default LoRA targets for 'groot' policies" "$work/none.log" || fail "no targets: $(tail -3 "$work/none.log")"

run "$work/one.log" "$recipes/groot.lua" "${common[@]}" output_dir="$work/one" steps=2 policy.pretrained_path="$base" \
  policy.peft.method_type=LORA "$targets"
run "$work/fsdp.log" --nproc 2 "$recipes/groot.lua" "${common[@]}" output_dir="$work/fsdp" steps=2 \
  policy.pretrained_path="$base" policy.peft.method_type=LORA "$targets" parallelism.dp_shard=2
for run_dir in one fsdp; do
  adapters="$work/$run_dir/checkpoints/000002/pretrained_model"
  [ -e "$adapters/adapter_model.safetensors" ] && [ ! -e "$adapters/model.safetensors" ] ||
    fail "$run_dir: the checkpoint is not an adapter folder"
  python3 - "$adapters" <<'PY' || fail "$run_dir: the adapter folder is not PEFT's for the targets"
import json, struct, sys
folder = sys.argv[1]
config = json.load(open(f"{folder}/adapter_config.json"))
assert config["peft_type"] == "LORA" and "transformer_blocks" in config["target_modules"], config
with open(f"{folder}/adapter_model.safetensors", "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
names = [n for n in header if n != "__metadata__"]
# 4 DiT blocks x (to_q, to_v) x (lora_A, lora_B)
assert len(names) == 16 and all(".attn1.to_q.lora_" in n or ".attn1.to_v.lora_" in n for n in names), names
PY
done
echo "ok: GR00T LoRA refused without targets, trained with the user's in one process and on 2 FSDP ranks"
