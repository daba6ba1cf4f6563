#!/usr/bin/env bash
# Runs one SmolVLA interop case against LeRobot 0.6.1's own SmolVLAPolicy (the oracle,
# smolvla_oracle.py; built offline from a local SmolVLM folder, no Hugging Face Hub):
#
#   run_smolvla_interop.sh CASE LRHOST_EXE WORK_DIR
#
# CASE:
#   smolvla_from_lerobot  LeRobot builds + saves a tiny SmolVLA (fp32, perturbed norms, dataset stats);
#                         both run the protocol (smolvla_oracle.py PROTOCOL: tokens, normalized batch,
#                         flow-matching loss and gradients with given noise/time, sampled chunk) on
#                         the same raw batch; lrhost re-saves the policy, the re-saved folder must equal
#                         the original and LeRobot must load it and give the same outputs.
#   smolvla_to_lerobot    lrhost builds + saves a tiny SmolVLA on the oracle's VLM folder; LeRobot
#                         loads it (explicit key/shape/dtype diff, then from_pretrained) and both run
#                         the protocol.
#   smolvla_keys          full-size SmolVLA (SmolVLM2-500M geometry, hub dtype mix, no weights):
#                         state_dict table (key order, shapes, dtypes), parameter order, trainable set
#                         and counts of lrhost against LeRobot's (500 tensors, 450,046,176 parameters,
#                         99,880,992 trainable).
# WORK_DIR is emptied and keeps every folder and output for inspection. Exits 77 (ctest's skip code)
# when `scripts/setup-interop --python` says the oracle is unavailable, 1 on any mismatch.
set -euo pipefail
case_name="${1:?usage: run_smolvla_interop.sh CASE LRHOST_EXE WORK_DIR}"
lrhost="${2:?lrhost executable}"
work="${3:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# The oracle's python (its own venv); prints why on stderr and skips when it is not installed.
py="$("$repo/scripts/setup-interop" --python)" || exit 77
if ! "$py" -c 'import transformers, lerobot.policies.smolvla.modeling_smolvla' >/dev/null 2>&1; then
  echo "oracle python $py cannot import LeRobot's SmolVLA (transformers missing?); skipping"
  exit 77
fi

rm -rf "$work"
mkdir -p "$work"
# One thread on both sides: the same kernels in the same order, and no oversubscription of the
# shared machine.
export OMP_NUM_THREADS=1 LRHOST_ORACLE_THREADS=1 LRHOST_RUN_DIR="$work/runs" PYTHONWARNINGS=ignore
start=$SECONDS
oracle_script=smolvla_oracle.py
# shellcheck source=oracle_steps.sh
source "$here/oracle_steps.sh"
lrhost_run() { # lrhost_run DIR OUT [resave=...]: the protocol with lrhost on the oracle's inputs
  local dir="$1" out="$2"
  shift 2
  quiet "$lrhost" "$here/smolvla_driver.lua" mode=run dir="$dir" inputs="$d/inputs.safetensors" \
    tasks="$d/inputs.safetensors.tasks.json" out="$out" "$@"
}

d="$work"
case "$case_name" in
  smolvla_from_lerobot)
    step "LeRobot builds and saves a tiny SmolVLA (VLM folder $d/vlm, policy $d/policy), writes the raw" \
      "input batch, runs the protocol"
    oracle make "$d" "&&" inputs "$d/policy" "$d/inputs.safetensors" \
      "&&" run "$d/policy" "$d/inputs.safetensors" "$d/lerobot.safetensors"
    step "lrhost loads, re-saves, runs the protocol"
    if lrhost_run "$d/policy" "$d/lrhost.safetensors" resave="$d/resaved"; then
      checks "compare outputs" compare "$d/lerobot.safetensors" "$d/lrhost.safetensors" \
        ";" "re-saved folder vs LeRobot's (weights exact, config, processors)" compare-dirs "$d/policy" "$d/resaved" \
        ";" "LeRobot loads lrhost's re-saved folder and runs the protocol" \
        run "$d/resaved" "$d/inputs.safetensors" "$d/lerobot_resaved.safetensors" \
        "&&" "LeRobot on the re-saved folder vs on the original" \
        compare "$d/lerobot.safetensors" "$d/lerobot_resaved.safetensors"
    else
      failures=$((failures + 1))
    fi
    ;;
  smolvla_to_lerobot)
    step "oracle writes the tiny VLM folder"
    oracle vlm "$d/vlm"
    step "lrhost builds and saves a tiny SmolVLA"
    if quiet "$lrhost" "$here/smolvla_driver.lua" mode=make vlm="$d/vlm" dir="$d/policy" work="$d"; then
      step "raw input batch; LeRobot loads (key/shape/dtype diff, from_pretrained) and runs the protocol"
      if oracle inputs "$d/policy" "$d/inputs.safetensors" "&&" run "$d/policy" "$d/inputs.safetensors" \
        "$d/lerobot.safetensors"; then
        step "lrhost runs the protocol"
        if lrhost_run "$d/policy" "$d/lrhost.safetensors"; then
          checks "compare outputs" compare "$d/lerobot.safetensors" "$d/lrhost.safetensors"
        else
          failures=$((failures + 1))
        fi
      else
        failures=$((failures + 1))
      fi
    else
      failures=$((failures + 1))
    fi
    ;;
  smolvla_keys)
    step "oracle writes the full-size VLM folder (SmolVLM2-500M geometry, hub dtypes) and LeRobot's table"
    oracle vlm "$d/vlm_full" --full-size --dtype hub "&&" keys "$d/vlm_full" "$d/lerobot_keys.json"
    step "lrhost's table"
    if quiet "$lrhost" "$here/smolvla_driver.lua" mode=keys vlm="$d/vlm_full" out="$d/lrhost_keys.json"; then
      checks "compare tables" compare-keys "$d/lerobot_keys.json" "$d/lrhost_keys.json"
    else
      failures=$((failures + 1))
    fi
    ;;
  *)
    echo "unknown case $case_name" >&2
    exit 2
    ;;
esac

step "done: $failures failing comparison(s)"
[ "$failures" -eq 0 ]
