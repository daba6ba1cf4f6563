#!/usr/bin/env bash
# Runs one policy interop case against LeRobot 0.6.1's own policy code (the oracle; see README.md):
#
#   run_policy_interop.sh CASE LRHOST_EXE WORK_DIR
#
# CASE:
#   policy_keys                   state_dict keys/shapes/dtypes, parameter order, optimizer groups and
#                                 config values of lrhost's ACT/Diffusion for the reference configs
#                                 (reference/lerobot.md §4) against LeRobot's; committed tables fresh.
#   policy_act_to_lerobot         lrhost builds + trains + saves a small ACT; LeRobot loads it strictly
#   policy_diffusion_to_lerobot   (key sets equal, config and processors parsed) and both compute the
#                                 same outputs (policy_oracle.py PROTOCOL) on the same raw batch.
#                                 Diffusion: DDPM/epsilon/BatchNorm/encoder per camera, then
#                                 DDIM/sample/GroupNorm/shared encoder.
#   policy_act_from_lerobot       LeRobot builds + saves (save_pretrained + processors); lrhost loads it
#   policy_diffusion_from_lerobot strictly, re-saves it (compared with the original) and both compute
#                                 the same outputs. ACT also with LeRobot's default dropout (0.1): the
#                                 training forward's masks must be the same draws.
# WORK_DIR is emptied and keeps every folder and output for inspection. Exits 77 (ctest's skip code)
# when `scripts/setup-interop --python` says the oracle is unavailable, 1 on any mismatch.
set -euo pipefail
case_name="${1:?usage: run_policy_interop.sh CASE LRHOST_EXE WORK_DIR}"
lrhost="${2:?lrhost executable}"
work="${3:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# The oracle's python (its own venv); prints why on stderr and skips when it is not installed.
py="$("$repo/scripts/setup-interop" --python)" || exit 77

rm -rf "$work"
mkdir -p "$work"
# One thread on both sides: the same kernels in the same order, and no oversubscription of the
# shared machine.
export OMP_NUM_THREADS=1 LRHOST_ORACLE_THREADS=1 LRHOST_RUN_DIR="$work/runs" PYTHONWARNINGS=ignore
start=$SECONDS
oracle_script=policy_oracle.py
# shellcheck source=oracle_steps.sh
source "$here/oracle_steps.sh"
check() { # check LABEL CMD...: a comparison whose output is always shown
  step "$1"
  shift
  local log="$work/check.log" rc=0
  "$@" >"$log" 2>&1 || rc=$?
  grep -v '^WARNING:' "$log" || true
  if [ "$rc" -ne 0 ]; then failures=$((failures + 1)); fi
}

# lrhost writes, LeRobot reads: the same protocol on both sides, LeRobot's output is the reference.
to_lerobot() { # to_lerobot KIND...
  local kind d made=() batch=()
  for kind in "$@"; do
    d="$work/$kind"
    mkdir -p "$d"
    step "$kind: lrhost builds, trains 2 steps, saves"
    if quiet "$lrhost" "$here/policy_driver.lua" mode=make kind="$kind" dir="$d/pretrained" work="$d"; then
      made+=("$kind")
      batch+=(inputs "$d/pretrained" "$d/inputs.safetensors" "&&")
    else
      failures=$((failures + 1))
    fi
  done
  [ "${#made[@]}" -gt 0 ] || return 0
  step "${made[*]}: raw input batch"
  oracle "${batch[@]}"
  batch=()
  for kind in "${made[@]}"; do
    d="$work/$kind"
    step "$kind: lrhost runs the protocol"
    if quiet "$lrhost" "$here/policy_driver.lua" mode=run dir="$d/pretrained" inputs="$d/inputs.safetensors" \
      out="$d/lrhost.safetensors"; then
      batch+=("$kind: LeRobot loads strictly and runs the protocol"
        run "$d/pretrained" "$d/inputs.safetensors" "$d/lerobot.safetensors" "&&"
        "$kind: compare outputs" compare "$d/lerobot.safetensors" "$d/lrhost.safetensors" ";")
    else
      failures=$((failures + 1))
    fi
  done
  checks "${batch[@]}"
}

# LeRobot writes, lrhost reads (and re-saves).
from_lerobot() { # from_lerobot KIND...
  local kind d batch=()
  for kind in "$@"; do
    d="$work/$kind"
    mkdir -p "$d"
    batch+=(make "$kind" "$d/pretrained" "&&" inputs "$d/pretrained" "$d/inputs.safetensors" "&&"
      run "$d/pretrained" "$d/inputs.safetensors" "$d/lerobot.safetensors" "&&")
  done
  step "$*: LeRobot builds and saves (save_pretrained + processors), writes the raw input batch, runs the protocol"
  oracle "${batch[@]}"
  batch=()
  for kind in "$@"; do
    d="$work/$kind"
    step "$kind: lrhost loads strictly, re-saves, runs the protocol"
    if quiet "$lrhost" "$here/policy_driver.lua" mode=run dir="$d/pretrained" inputs="$d/inputs.safetensors" \
      out="$d/lrhost.safetensors" resave="$d/resaved"; then
      batch+=("$kind: compare outputs" compare "$d/lerobot.safetensors" "$d/lrhost.safetensors" ";"
        "$kind: re-saved folder vs LeRobot's" compare-dirs "$d/pretrained" "$d/resaved" ";")
    else
      failures=$((failures + 1))
    fi
  done
  checks "${batch[@]}"
}

case "$case_name" in
  policy_keys)
    step "lrhost tables (reference configs)"
    quiet "$lrhost" "$here/policy_keys.lua" out="$work/lrhost_tables.json"
    check "LeRobot tables vs lrhost and committed fixtures" "$py" "$here/policy_keys.py" "$work/tables" \
      --compare-lrhost "$work/lrhost_tables.json" --fixtures "$repo/tests/fixtures/policies"
    ;;
  policy_act_to_lerobot) to_lerobot act ;;
  policy_diffusion_to_lerobot) to_lerobot diffusion diffusion_ddim ;;
  policy_act_from_lerobot) from_lerobot act act_dropout ;;
  policy_diffusion_from_lerobot) from_lerobot diffusion diffusion_ddim ;;
  *)
    echo "unknown case $case_name" >&2
    exit 2
    ;;
esac

step "done: $failures failing comparison(s)"
[ "$failures" -eq 0 ]
