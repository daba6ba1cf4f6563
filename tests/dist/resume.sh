#!/usr/bin/env bash
# Resume exactness end to end (see resume.lua): run A trains without a break; run B stops after
# saving step 12, then a killed save of step 20 is simulated (a temporary folder and an incomplete
# step folder); `lrhost resume` must continue B from step 12, ignore and replace the broken pieces,
# and end with the same parameters, losses and learning rates as A (TOLERANCE 0: bit for bit).
# Usage: resume.sh LRHOST WORK_DIR NPROC TOLERANCE [recipe overrides for both runs...]
set -euo pipefail
exe=$1 work=$2 nproc=$3 tolerance=$4
shift 4
extra=("$@")
recipe="$(cd "$(dirname "$0")" && pwd)/resume.lua"
rm -rf "$work"
mkdir -p "$work"
launch=(--device cpu)
if [ "$nproc" -gt 1 ]; then launch=(--nproc "$nproc" --device cpu); fi
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout 120 "$exe" "$@"; }

lrhost run "${launch[@]}" --run-dir "$work/run_a" "$recipe" output_dir="$work/a" result="$work/a.safetensors" "${extra[@]}"
lrhost run "${launch[@]}" --run-dir "$work/run_b" "$recipe" output_dir="$work/b" result="$work/b.safetensors" stop_after=12 "${extra[@]}"
[ ! -e "$work/b.safetensors" ] || fail "the interrupted run wrote a result"
[ "$(readlink "$work/b/checkpoints/last")" = "000012" ] || fail "last should point to 000012"

# A save of step 20 killed half-way: its temporary folder, and (as after a non-atomic copy) a
# step folder without its training state. Neither may be used.
mkdir -p "$work/b/checkpoints/.tmp-000020-99999/pretrained_model"
echo '{"type": "mlp", "trunc' > "$work/b/checkpoints/.tmp-000020-99999/pretrained_model/config.json"
mkdir -p "$work/b/checkpoints/000020"
cp -r "$work/b/checkpoints/000012/pretrained_model" "$work/b/checkpoints/000020/"
lrhost checkpoint info "$work/b" > "$work/info_before.txt"
grep -q "000020  incomplete" "$work/info_before.txt" || fail "info does not report 000020 as incomplete"
grep -q "interrupted save" "$work/info_before.txt" || fail "info does not report the temporary folder"
grep -q "step: 12 of 30" "$work/info_before.txt" || fail "info does not describe step 12"

lrhost resume "${launch[@]}" --run-dir "$work/run_resume" "$work/b" 2>&1 | tee "$work/resume.log"
grep -q "resumed from step 12" "$work/resume.log" || fail "the resumed run did not start from step 12"
[ -e "$work/b.safetensors" ] || fail "the resumed run wrote no result"
[ "$(readlink "$work/b/checkpoints/last")" = "000030" ] || fail "last should point to 000030"
ls -a "$work/b/checkpoints" | grep -q '^\.tmp-' && fail "temporary folders were left behind"
[ -e "$work/b/checkpoints/000020/training_state/rng_state.safetensors" ] || fail "000020 was not rewritten"
lrhost checkpoint info "$work/b" > "$work/info_after.txt"
grep -q "step: 30 of 30" "$work/info_after.txt" || fail "info does not describe step 30"

lrhost run --device cpu --run-dir "$work/run_compare" "$recipe" \
  compare="$work/a.safetensors,$work/b.safetensors" tolerance="$tolerance"
