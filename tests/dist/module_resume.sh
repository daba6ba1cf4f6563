#!/usr/bin/env bash
# Resume chains with the code that produced them: a recipe that requires a module beside itself
# trains to step 4 (keep_last = 1). Both files are then deleted, so only the checkpoint's recipe
# snapshot (train_recipe.lua, train_modules/) can serve `lrhost resume` to step 6; that run's
# keep_last removes the checkpoint it started from, and a second `lrhost resume` continues to 8 from
# the resumed run's own checkpoint, whose `checkpoint info` still names the original recipe file.
# `checkpoint info` calls a checkpoint without its module copy incomplete. Resuming with steps below
# the step reached is an error that names it. A fresh run into the used folder is refused unless
# --overwrite (old checkpoints and metrics kept aside).
# Usage: module_resume.sh LRHOST WORK_DIR
set -euo pipefail
exe=$1 work=$2
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$work"
mkdir -p "$work/recipe"
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout -k 5 120 "$exe" "$@"; }
cp "$here/recipes/module_recipe.lua" "$here/recipes/module_recipe_helper.lua" "$work/recipe/"

lrhost run --device cpu --run-dir "$work/run" "$work/recipe/module_recipe.lua" output_dir="$work/out"
rm -r "$work/recipe"
[ -f "$work/out/checkpoints/000004/pretrained_model/train_modules/module_recipe_helper.lua" ] ||
  fail "the module is not in the checkpoint"
lrhost resume --device cpu --run-dir "$work/resume1" "$work/out" steps=6 2>&1 | tee "$work/resume1.log"
grep -q "module_recipe finished at step 6 with helper v1" "$work/resume1.log" || fail "the first resume did not finish"
[ ! -e "$work/out/checkpoints/000004" ] || fail "keep_last = 1 kept the source checkpoint"
lrhost resume --device cpu --run-dir "$work/resume2" "$work/out" steps=8 2>&1 | tee "$work/resume2.log"
grep -q "resume: restored step 6" "$work/resume2.log" || fail "the second resume did not start from step 6"
grep -q "module_recipe finished at step 8 with helper v1" "$work/resume2.log" || fail "the second resume did not finish"
# steps below the step the checkpoint reached is an error naming that step, not a run that trains nothing.
if lrhost resume --device cpu --run-dir "$work/resume3" "$work/out" steps=5 > "$work/resume3.log" 2>&1; then
  fail "resuming a step-8 checkpoint with steps=5 was accepted"
fi
grep -q "000008 already reached step 8, but this run ends at step 5 (config key 'steps')" "$work/resume3.log" &&
  grep -q "give steps=9 or more" "$work/resume3.log" ||
  { cat "$work/resume3.log"; fail "the steps=5 error does not name the step reached"; }
# Resuming the finished run (step 8 of 8) trains nothing, exits 0, and says how to train further.
lrhost resume --device cpu --run-dir "$work/resume4" "$work/out" > "$work/resume4.log" 2>&1 ||
  { cat "$work/resume4.log"; fail "resuming the finished run (step 8 of 8) failed"; }
grep -q "000008 is already at step 8 of 8 (.*): the run is finished and trains no step" "$work/resume4.log" &&
  grep -q "pass steps=M (or --steps=M to lrhost lerobot-train) with M > 8" "$work/resume4.log" ||
  { cat "$work/resume4.log"; fail "resuming the finished run does not say it is finished"; }

lrhost checkpoint info "$work/out" > "$work/info_chain.txt"
grep -q "complete: yes" "$work/info_chain.txt" || fail "the last checkpoint is not complete"
# Two resumes later, the recipe is still the file the user ran, not the copy keep_last deleted.
grep -q "  recipe: $work/recipe/module_recipe.lua .*(copy: pretrained_model/train_recipe.lua)" "$work/info_chain.txt" ||
  { cat "$work/info_chain.txt"; fail "checkpoint info does not name the original recipe"; }
rm "$work/out/checkpoints/000008/pretrained_model/train_modules/module_recipe_helper.lua"
lrhost checkpoint info "$work/out/checkpoints/000008" > "$work/info.txt" || true
grep -q "complete: no (missing pretrained_model/train_modules/module_recipe_helper.lua)" "$work/info.txt" ||
  fail "checkpoint info does not report the missing module copy"

# A fresh run (resume=false) into this used folder is refused; --overwrite moves the old
# checkpoints, metrics.jsonl and tensorboard/ aside (never deletes them) and starts at step 1.
mkdir -p "$work/recipe2" && cp "$here/recipes/module_recipe.lua" "$here/recipes/module_recipe_helper.lua" "$work/recipe2/"
if lrhost run --device cpu --run-dir "$work/fresh" "$work/recipe2/module_recipe.lua" output_dir="$work/out" resume=false \
    > "$work/fresh.log" 2>&1; then fail "a fresh run into a used folder was accepted"; fi
grep -q "already holds checkpoints of another run" "$work/fresh.log" || fail "the refusal does not say why"
echo '{"step": 8, "loss": 0.5}' > "$work/out/metrics.jsonl"  # as a training recipe's sinks leave them
mkdir -p "$work/out/tensorboard" && echo old > "$work/out/tensorboard/events.out.tfevents.1.old"
lrhost run --device cpu --overwrite --run-dir "$work/fresh2" "$work/recipe2/module_recipe.lua" output_dir="$work/out" \
  resume=false steps=2
ls "$work/out/checkpoints"/superseded-*/000008 > /dev/null || fail "--overwrite did not keep the old checkpoints aside"
grep -q '"step": 8' "$work/out/checkpoints"/superseded-*/metrics.jsonl || fail "--overwrite did not keep metrics.jsonl aside"
ls "$work/out/checkpoints"/superseded-*/tensorboard/events.out.tfevents.1.old > /dev/null ||
  fail "--overwrite did not keep tensorboard/ aside"
[ ! -e "$work/out/metrics.jsonl" ] && [ ! -e "$work/out/tensorboard" ] || fail "the old metrics are still in place"
[ "$(readlink "$work/out/checkpoints/last")" = "000002" ] || fail "the overwriting run did not save step 2"
echo "module resume chain: ok"
