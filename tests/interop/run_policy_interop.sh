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
step() { printf '[interop %s +%ds] %s\n' "$case_name" $((SECONDS - start)) "$*"; }
quiet() { # run a command, showing its output only when it fails (last line otherwise)
  local log="$work/last.log"
  if ! "$@" >"$log" 2>&1; then
    grep -v '^WARNING:' "$log" | tail -n 60
    echo "command failed: $*" >&2
    return 1
  fi
  grep -v '^WARNING:\|^Loading weights' "$log" | tail -n 1
}
oracle() { quiet "$py" "$here/policy_oracle.py" "$@"; }
failures=0
check() { # check LABEL CMD...: a comparison whose output is always shown
  step "$1"
  shift
  local log="$work/check.log" rc=0
  "$@" >"$log" 2>&1 || rc=$?
  grep -v '^WARNING:' "$log" || true
  if [ "$rc" -ne 0 ]; then failures=$((failures + 1)); fi
}

# lrhost writes, LeRobot reads: the same protocol on both sides, LeRobot's output is the reference.
to_lerobot() {
  local kind="$1" d="$work/$1"
  mkdir -p "$d"
  step "$kind: lrhost builds, trains 2 steps, saves"
  if ! quiet "$lrhost" "$here/policy_driver.lua" mode=make kind="$kind" dir="$d/pretrained" work="$d"; then
    failures=$((failures + 1))
    return
  fi
  step "$kind: raw input batch"
  oracle inputs "$d/pretrained" "$d/inputs.safetensors"
  step "$kind: lrhost runs the protocol"
  if ! quiet "$lrhost" "$here/policy_driver.lua" mode=run dir="$d/pretrained" inputs="$d/inputs.safetensors" \
    out="$d/lrhost.safetensors"; then
    failures=$((failures + 1))
    return
  fi
  step "$kind: LeRobot loads strictly and runs the protocol"
  if ! oracle run "$d/pretrained" "$d/inputs.safetensors" "$d/lerobot.safetensors"; then
    failures=$((failures + 1))
    return
  fi
  check "$kind: compare outputs" "$py" "$here/policy_oracle.py" compare "$d/lerobot.safetensors" "$d/lrhost.safetensors"
}

# LeRobot writes, lrhost reads (and re-saves).
from_lerobot() {
  local kind="$1" d="$work/$1"
  mkdir -p "$d"
  step "$kind: LeRobot builds and saves (save_pretrained + processors)"
  oracle make "$kind" "$d/pretrained"
  oracle inputs "$d/pretrained" "$d/inputs.safetensors"
  step "$kind: LeRobot runs the protocol"
  oracle run "$d/pretrained" "$d/inputs.safetensors" "$d/lerobot.safetensors"
  step "$kind: lrhost loads strictly, re-saves, runs the protocol"
  if ! quiet "$lrhost" "$here/policy_driver.lua" mode=run dir="$d/pretrained" inputs="$d/inputs.safetensors" \
    out="$d/lrhost.safetensors" resave="$d/resaved"; then
    failures=$((failures + 1))
    return
  fi
  check "$kind: compare outputs" "$py" "$here/policy_oracle.py" compare "$d/lerobot.safetensors" "$d/lrhost.safetensors"
  check "$kind: re-saved folder vs LeRobot's" "$py" "$here/policy_oracle.py" compare-dirs "$d/pretrained" "$d/resaved"
}

case "$case_name" in
  policy_keys)
    step "lrhost tables (reference configs)"
    quiet "$lrhost" "$here/policy_keys.lua" out="$work/lrhost_tables.json"
    check "LeRobot tables vs lrhost and committed fixtures" "$py" "$here/policy_keys.py" "$work/tables" \
      --compare-lrhost "$work/lrhost_tables.json" --fixtures "$repo/tests/fixtures/policies"
    ;;
  policy_act_to_lerobot) to_lerobot act ;;
  policy_diffusion_to_lerobot) to_lerobot diffusion; to_lerobot diffusion_ddim ;;
  policy_act_from_lerobot) from_lerobot act; from_lerobot act_dropout ;;
  policy_diffusion_from_lerobot) from_lerobot diffusion; from_lerobot diffusion_ddim ;;
  *)
    echo "unknown case $case_name" >&2
    exit 2
    ;;
esac

step "done: $failures failing comparison(s)"
[ "$failures" -eq 0 ]
