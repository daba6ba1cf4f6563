#!/usr/bin/env bash
# Runs one pi0 / pi05 interop case against LeRobot 0.6.1's own PI0Policy / PI05Policy (the oracle,
# pi_oracle.py; built offline at a tiny geometry with a Gemma-style tokenizer in a local Hub cache):
#
#   run_pi_interop.sh CASE LRHOST_EXE WORK_DIR
#
# CASE:
#   pi0_from_lerobot, pi05_from_lerobot
#         LeRobot builds + saves a tiny policy (fp32, every weight redrawn, dataset stats with quantiles,
#         geometry.json); both run the protocol (pi_oracle.py PROTOCOL: tokens, normalized batch,
#         flow-matching loss and gradients with given noise/time, sampled chunk, unnormalized chunk) on
#         the same raw batch; lrhost re-saves the policy, the re-saved folder must equal the original and
#         LeRobot must load it and give the same outputs.
#   pi0_freeze_vision, pi05_expert_only
#         The same policies with freeze_vision_encoder / train_expert_only: outputs compared, the set of
#         gradient names included (which tensors are frozen).
#   pi0_bf16, pi05_bf16
#         As *_from_lerobot in LeRobot's dtype = "bfloat16" mode, within the bf16 tolerances.
# WORK_DIR is emptied and keeps every folder and output for inspection; the tokenizer's Hub cache is
# WORK_DIR/hf_cache (HF_HUB_CACHE, exported for both sides). Exits 77 (ctest's skip code) when the
# oracle's python is unavailable (LRHOST_INTEROP_PYTHON overrides it), 1 on any mismatch.
set -euo pipefail
case_name="${1:?usage: run_pi_interop.sh CASE LRHOST_EXE WORK_DIR}"
lrhost="${2:?lrhost executable}"
work="${3:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=oracle_python.sh
source "$here/oracle_python.sh"
require_oracle_python "tokenizers, transformers, lerobot.policies.pi0.modeling_pi0, lerobot.policies.pi05.modeling_pi05"

rm -rf "$work"
mkdir -p "$work"
# One thread on both sides: the same kernels in the same order, and no oversubscription of the shared
# machine. Offline Hub: the tokenizer comes from the cache the oracle writes.
export OMP_NUM_THREADS=1 LRHOST_ORACLE_THREADS=1 LRHOST_RUN_DIR="$work/runs" PYTHONWARNINGS=ignore \
  HF_HUB_CACHE="$work/hf_cache" HF_HUB_OFFLINE=1
start=$SECONDS
oracle_script=pi_oracle.py
# shellcheck source=oracle_steps.sh
source "$here/oracle_steps.sh"
d="$work"

case "$case_name" in
  pi0_from_lerobot) policy=pi0 freeze=none resave=1 dtype=float32 ;;
  pi05_from_lerobot) policy=pi05 freeze=none resave=1 dtype=float32 ;;
  pi0_freeze_vision) policy=pi0 freeze=vision resave=0 dtype=float32 ;;
  pi05_expert_only) policy=pi05 freeze=expert resave=0 dtype=float32 ;;
  # LeRobot's bf16 mode (dtype = "bfloat16": its dtype split, bf16-rounded RoPE frequencies and embedding
  # scale), compared within the bf16 tolerances, both sides without autocast.
  pi0_bf16) policy=pi0 freeze=none resave=1 dtype=bfloat16 ;;
  pi05_bf16) policy=pi05 freeze=none resave=1 dtype=bfloat16 ;;
  *)
    echo "unknown case $case_name" >&2
    exit 2
    ;;
esac

step "LeRobot builds and saves a tiny $policy (freeze $freeze) in $d/policy, writes the raw input batch," \
  "runs the protocol"
oracle make "$d/policy" --policy "$policy" --freeze "$freeze" --dtype "$dtype" \
  "&&" inputs "$d/policy" "$d/inputs.safetensors" \
  "&&" run "$d/policy" "$d/inputs.safetensors" "$d/lerobot.safetensors"
resave_arg=()
if [ "$resave" = 1 ]; then
  step "lrhost loads, re-saves, runs the protocol"
  resave_arg=(resave="$d/resaved")
else
  step "lrhost loads and runs the protocol"
fi
if quiet "$lrhost" "$here/pi_driver.lua" dir="$d/policy" inputs="$d/inputs.safetensors" \
  tasks="$d/inputs.safetensors.tasks.json" out="$d/lrhost.safetensors" "${resave_arg[@]}"; then
  if [ "$resave" = 1 ]; then
    checks "compare outputs (gradient names included)" compare "$d/lerobot.safetensors" "$d/lrhost.safetensors" \
      ";" "re-saved folder vs LeRobot's (weights exact, config, processors, geometry.json)" \
      compare-dirs "$d/policy" "$d/resaved" \
      ";" "LeRobot loads lrhost's re-saved folder and runs the protocol" \
      run "$d/resaved" "$d/inputs.safetensors" "$d/lerobot_resaved.safetensors" \
      "&&" "LeRobot on the re-saved folder vs on the original" \
      compare "$d/lerobot.safetensors" "$d/lerobot_resaved.safetensors"
  else
    checks "compare outputs (gradient names included)" compare "$d/lerobot.safetensors" "$d/lrhost.safetensors"
  fi
else
  failures=$((failures + 1))
fi

step "done: $failures failing comparison(s)"
[ "$failures" -eq 0 ]
