#!/usr/bin/env bash
# Silent corruption on resume (resume.lua): a run saves steps 5 and 10 and stops; one random bit of
# FILE's tensor data in the newest checkpoint (000010) is flipped. `lrhost checkpoint verify` must
# exit 1 naming FILE and the byte range, `checkpoint info` must not call 000010 sound, the older
# checkpoint must verify, and `lrhost resume RUN` must continue from step 5 with a warning naming FILE
# and the byte range, and finish (the damaged folder is moved aside, not deleted); a copy of the run
# continued with resume=true (the ranks choose, splitting the verification) must do the same. A copy
# whose 000010 lost its checksums.json must be reported damaged and skipped the same way.
# Usage: corrupt_resume.sh LRHOST WORK_DIR NPROC FILE [recipe overrides...]
#   FILE: relative to the step folder, e.g. pretrained_model/model.safetensors or
#   training_state/fsdp_shards/rank_1.safetensors (with parallelism.dp_shard=-1 and NPROC > 1).
set -euo pipefail
exe=$1 work=$2 nproc=$3 file=$4
shift 4
extra=("$@")
recipe="$(cd "$(dirname "$0")" && pwd)/resume.lua"
# shellcheck source=flip_tensor_bit.sh
source "$(dirname "$0")/flip_tensor_bit.sh"
rm -rf "$work"
mkdir -p "$work"
launch=(--device cpu)
if [ "$nproc" -gt 1 ]; then launch=(--nproc "$nproc" --device cpu); fi
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout 120 "$exe" "$@"; }
common=(steps=15 save_freq=5 dropout=0 ${extra[@]+"${extra[@]}"})

lrhost run "${launch[@]}" --run-dir "$work/run_b" "$recipe" output_dir="$work/b" result="$work/b.safetensors" \
  stop_after=10 "${common[@]}"
newest="$work/b/checkpoints/000010"
[ -e "$newest/checksums.json" ] || fail "no checksums.json in $newest"
lrhost checkpoint verify "$work/b" > "$work/verify_sound.txt" || fail "a fresh run does not verify"
grep -q "000010: verified" "$work/verify_sound.txt" || fail "verify does not report 000010 verified"

cp -r "$work/b" "$work/d"  # for the lost manifest below

# One random bit of the tensor data (after the 8-byte length and the JSON header).
target="$newest/$file"
flip_tensor_bit "$target"
echo "flipped bit $bit of byte $offset of $file"

set +e
lrhost checkpoint verify "$work/b" > "$work/verify.txt"
code=$?
set -e
cat "$work/verify.txt"
[ $code -eq 1 ] || fail "verify exited $code on a flipped bit (expected 1)"
grep -q "000005: verified" "$work/verify.txt" || fail "the older checkpoint does not verify"
grep -q "000010: DATA DOES NOT MATCH" "$work/verify.txt" || fail "verify does not report 000010"
grep -q "  $file: bytes [0-9]*-[0-9]* data does not match" "$work/verify.txt" || fail "verify does not name $file and the byte range"
lrhost checkpoint info "$work/b" > "$work/info.txt"
grep -q "000010  damaged: $file: bytes" "$work/info.txt" || fail "info does not report 000010 as damaged"
grep -q "000005  complete, verified" "$work/info.txt" || fail "info does not report 000005 as verified"

# The ranks' own choice (resume=true, no checkpoint named): each rank verifies its share of the files
# (a shard file on the rank of its number), and all agree to skip 000010.
cp -r "$work/b" "$work/c"
lrhost run "${launch[@]}" --run-dir "$work/run_c" "$recipe" output_dir="$work/c" result="$work/c.safetensors" \
  resume=true "${common[@]}" 2>&1 | tee "$work/auto.log"
grep -q "000010 is damaged ($file: bytes [0-9]*-[0-9]* data does not match" "$work/auto.log" ||
  fail "resume=true does not name $file and the byte range"
grep -q "resumed from step 5" "$work/auto.log" || fail "resume=true did not start from step 5"
[ -e "$work/c.safetensors" ] || fail "the resume=true run wrote no result"

lrhost resume "${launch[@]}" --run-dir "$work/run_resume" "$work/b" 2>&1 | tee "$work/resume.log"
grep -q "resumed from step 5" "$work/resume.log" || fail "the resumed run did not start from step 5"
grep -q "000010 is damaged ($file: bytes [0-9]*-[0-9]* data does not match" "$work/resume.log" ||
  fail "the resume does not name $file and the byte range"
[ -e "$work/b.safetensors" ] || fail "the resumed run wrote no result"
[ "$(readlink "$work/b/checkpoints/last")" = "000015" ] || fail "last should point to 000015"
ls "$work/b/checkpoints"/superseded-*/000010 > /dev/null || fail "the damaged checkpoint was not moved aside"
lrhost checkpoint verify "$work/b/checkpoints/000015" || fail "the resumed run's checkpoint does not verify"
# A lost checksums.json on an lrhost checkpoint (it has train_launch.json) is damage, not a LeRobot
# checkpoint to resume unverified: verify fails, and resume=true falls back to step 5 saying why.
rm "$work/d/checkpoints/000010/checksums.json"
set +e
lrhost checkpoint verify "$work/d" > "$work/verify_lost.txt"
code=$?
set -e
[ $code -eq 1 ] || fail "verify exited $code on a lost manifest (expected 1)"
grep -q "000010: DAMAGED: its checksums.json is missing, but it is an lrhost checkpoint" "$work/verify_lost.txt" ||
  fail "verify does not report the lost manifest: $(cat "$work/verify_lost.txt")"
lrhost run "${launch[@]}" --run-dir "$work/run_d" "$recipe" output_dir="$work/d" result="$work/d.safetensors" \
  resume=true "${common[@]}" 2>&1 | tee "$work/lost.log"
grep -q "000010 is damaged (its checksums.json is missing" "$work/lost.log" || fail "resume does not name the lost manifest"
grep -q "resumed from step 5" "$work/lost.log" || fail "resume with a lost manifest did not start from step 5"
echo "corrupt_resume: OK"
