#!/usr/bin/env bash
# Runs one LoRA interop case against LeRobot 0.6.1 + PEFT 0.18 (lora_oracle.py; lrhost's side is
# lora_driver.lua) on a tiny pretrained policy that LeRobot builds (smolvla_oracle.py / pi_oracle.py make):
#
#   run_lora_interop.sh CASE LRHOST_EXE WORK_DIR
#
# CASE: {smolvla,pi0,pi05}_lora_{default,second}, {pi0,pi05}_lora_openpi
#   default  LeRobot's --peft.method_type=LORA alone: r 16, PEFT's alpha 8, the policy type's default
#            target regex;
#   second   r 8, alpha 32, a list of targets, full_training_modules, use_rslora (lora_oracle.py SECOND);
#   openpi   (pi0, pi05) policy.peft.preset = "openpi" against PEFT's LoraConfig of openpi's recipe: rank
#            16 on the VLM, rank_pattern / alpha_pattern 32 on the expert, SigLIP and projections in full.
# Steps: LeRobot and lrhost each wrap the same pretrained folder with the same seed and save an adapter
# folder; the folders must be equal (adapter_config.json field by field, every adapter tensor exactly:
# the same init drawn from the same generator); lrhost loads LeRobot's folder and LeRobot lrhost's, and
# on the same batch, noise and time both give the same loss, adapter gradients, sampled chunk, and the
# same again after one AdamW step, and the same adapters after two; `lrhost checkpoint merge` of the
# trained adapters gives a plain folder LeRobot loads, whose loss and chunk equal the adapters'.
# WORK_DIR is emptied and keeps every folder and output. Exits 77 (ctest's skip code) when the oracle's
# python (with peft) is unavailable, 1 on any mismatch.
set -euo pipefail
case_name="${1:?usage: run_lora_interop.sh CASE LRHOST_EXE WORK_DIR}"
lrhost="${2:?lrhost executable}"
work="${3:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
policy="${case_name%%_lora_*}"
config="${case_name##*_lora_}"
case "$policy:$config" in
  smolvla:default | smolvla:second | pi0:default | pi0:second | pi05:default | pi05:second | pi0:openpi | pi05:openpi) ;;
  *)
    echo "unknown case $case_name" >&2
    exit 2
    ;;
esac
# shellcheck source=oracle_python.sh
source "$here/oracle_python.sh"
require_oracle_python "peft, transformers, lerobot.policies.smolvla.modeling_smolvla, lerobot.policies.pi05.modeling_pi05"

rm -rf "$work"
mkdir -p "$work"
# One thread on both sides (the same kernels in the same order); the pi tokenizer's offline Hub cache.
export OMP_NUM_THREADS=1 LRHOST_ORACLE_THREADS=1 LRHOST_RUN_DIR="$work/runs" PYTHONWARNINGS=ignore \
  HF_HUB_CACHE="$work/hf_cache" HF_HUB_OFFLINE=1
start=$SECONDS
# shellcheck source=oracle_steps.sh
source "$here/oracle_steps.sh"
d="$work"

step "LeRobot builds and saves a tiny pretrained $policy in $d/policy and writes the raw input batch"
if [ "$policy" = smolvla ]; then
  type_oracle=smolvla_oracle.py
  oracle_script=$type_oracle
  oracle make "$d" "&&" inputs "$d/policy" "$d/inputs.safetensors"
else
  type_oracle=pi_oracle.py
  oracle_script=$type_oracle
  oracle make "$d/policy" --policy "$policy" "&&" inputs "$d/policy" "$d/inputs.safetensors"
fi

oracle_script=lora_oracle.py
step "LeRobot wraps it with PEFT ($config, seed 42), saves $d/lerobot_adapter and runs the LoRA protocol"
oracle wrap "$d/policy" "$d/lerobot_adapter" --config "$config" --seed 42 \
  "&&" run "$d/lerobot_adapter" "$d/inputs.safetensors" "$d/lerobot.safetensors"
step "lrhost wraps it ($config, seed 42), saves $d/lrhost_adapter; runs the protocol on LeRobot's folder"
if quiet "$lrhost" "$here/lora_driver.lua" mode=wrap src="$d/policy" out="$d/lrhost_adapter" config="$config" \
  seed=42 && quiet "$lrhost" "$here/lora_driver.lua" mode=run dir="$d/lerobot_adapter" \
  inputs="$d/inputs.safetensors" out="$d/lrhost.safetensors" trained="$d/trained_adapter" &&
  quiet "$lrhost" checkpoint merge "$d/trained_adapter" --out "$d/merged"; then
  checks "lrhost's adapter folder vs LeRobot's (config fields, init exactly equal)" \
    compare-adapters "$d/lerobot_adapter" "$d/lrhost_adapter" \
    ";" "lrhost on LeRobot's adapters vs LeRobot (loss, gradients, chunk; after 1 and 2 AdamW steps)" \
    compare "$d/lerobot.safetensors" "$d/lrhost.safetensors" \
    ";" "LeRobot loads lrhost's adapter folder and runs the LoRA protocol" \
    run "$d/lrhost_adapter" "$d/inputs.safetensors" "$d/lerobot_on_lrhost.safetensors" \
    "&&" "LeRobot on lrhost's folder vs on its own" \
    compare "$d/lerobot.safetensors" "$d/lerobot_on_lrhost.safetensors" \
    ";" "LeRobot on the trained adapters (saved by lrhost after two steps)" \
    run "$d/trained_adapter" "$d/inputs.safetensors" "$d/lerobot_trained.safetensors"
  step "LeRobot loads the folder \`lrhost checkpoint merge\` made of them as a plain policy, runs its protocol"
  oracle_script=$type_oracle
  if oracle run "$d/merged" "$d/inputs.safetensors" "$d/lerobot_merged.safetensors"; then
    oracle_script=lora_oracle.py
    checks "the merged folder vs the adapters (loss, chunk)" \
      compare-merged "$d/lerobot_trained.safetensors" "$d/lerobot_merged.safetensors"
  else
    failures=$((failures + 1))
  fi
else
  failures=$((failures + 1))
fi

step "done: $failures failing comparison(s)"
[ "$failures" -eq 0 ]
