#!/usr/bin/env bash
# A plain run that fails before it starts leaves no ./outputs/lrhost/<time>_<recipe>/ folder behind
# (a typo in an override, `lrhost eval` of a folder that is no checkpoint), while a run that started
# (lr.accelerator) keeps its folder and logs when it fails. Runs in an empty folder without
# $LRHOST_RUN_DIR, so each case uses the default folder.
# Usage: run_dir_cleanup.sh LRHOST WORK_DIR CASES_DIR
set -uo pipefail
exe=$1 work=$2 cases=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
unset LRHOST_RUN_DIR
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout -k 5 120 "$exe" "$@"; }
# expect_failure NAME ARGS...: the command must fail; its output goes to NAME.txt.
expect_failure() {
  local name=$1
  shift
  if lrhost "$@" > "$name.txt" 2>&1; then cat "$name.txt"; fail "$name: expected a failure"; fi
}
folders() { find outputs/lrhost -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

expect_failure typo "$cases/config_recipe.lua" steps=many
grep -q "config key 'steps' expects a number" typo.txt || { cat typo.txt; fail "typo: not the expected error"; }
grep -q "removed the run folder .*outputs/lrhost/.*_config_recipe: the run failed before it started" typo.txt ||
  { cat typo.txt; fail "typo: the removal is not reported"; }
[ "$(folders)" -eq 0 ] || { ls -R outputs; fail "a failed override left a run folder"; }

expect_failure eval eval "$work"
grep -q "not a run folder, checkpoint step folder or pretrained folder" eval.txt || { cat eval.txt; fail "eval: not the expected error"; }
[ "$(folders)" -eq 0 ] || { ls -R outputs; fail "a failed eval left a run folder"; }

expect_failure started "$cases/fails_after_start.lua"
grep -q "failing after the run started" started.txt || { cat started.txt; fail "started: not the expected error"; }
[ "$(folders)" -eq 1 ] || { ls -R outputs; fail "a run that started and failed lost its folder"; }
ls outputs/lrhost/*_fails_after_start/logs/rank0.log > /dev/null || fail "the started run's log is missing"
rm -rf outputs

# The same for a launched job (2 CPU ranks): the launcher removes the folder it claimed when no rank
# started its run, and keeps the folder of a job whose ranks started.
expect_failure launched_typo --nproc 2 --device cpu "$cases/config_recipe.lua" steps=many
grep -q "config key 'steps' expects a number" launched_typo.txt || { cat launched_typo.txt; fail "launched typo: not the expected error"; }
grep -q "removed the run folder .*outputs/lrhost/.*_config_recipe: the run failed before it started" launched_typo.txt ||
  { cat launched_typo.txt; fail "launched typo: the removal is not reported"; }
[ "$(folders)" -eq 0 ] || { ls -R outputs; fail "a launched job that failed on an override left a run folder"; }
expect_failure launched_started --nproc 2 --device cpu "$cases/fails_after_start.lua"
grep -q "failing after the run started" launched_started.txt || { cat launched_started.txt; fail "launched started: not the expected error"; }
[ "$(folders)" -eq 1 ] || { ls -R outputs; fail "a launched job that started and failed lost its folder"; }
ls outputs/lrhost/*_fails_after_start/logs/launcher.log > /dev/null || fail "the started job's launcher log is missing"
echo "ok: failed attempts leave no folder, a started run keeps its own (one process and two ranks)"
