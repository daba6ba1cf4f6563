#!/usr/bin/env bash
# Asynchronous saves of FSDP sharded checkpoints (resume.lua, parallelism.dp_shard=-1, no dropout)
# against synchronous ones on NPROC CPU ranks: each mode trains with saves every SAVE_FREQ steps,
# stops after saving step 12 and is resumed by `lrhost resume` to step 20 (still saving in its mode).
# Both modes run with the same output folder and result path (the first moved aside afterwards), so
# their configs differ only in save_async. Then: the async side must have written in the background
# on every rank (before and after the resume); the final parameters, losses and learning rates must
# be equal bit for bit; and every checkpoint of one side must be byte-identical to the same step of
# the other — every file, shards and their rank manifests included — except train_config.json and
# train_launch.json, which may differ only in the save_async line, and so checksums.json only in
# those two entries.
# Usage: async_fsdp_resume.sh LRHOST WORK_DIR NPROC. Each lrhost call is killed after
# ASYNC_FSDP_CALL_TIMEOUT seconds (default 120); the launcher stops its ranks.
set -euo pipefail
exe=$1 work=$2 nproc=$3
recipe="$(cd "$(dirname "$0")" && pwd)/resume.lua"
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout -k 5 "${ASYNC_FSDP_CALL_TIMEOUT:-120}" "$exe" "$@"; }
launch=(--nproc "$nproc" --device cpu)
common=(parallelism.dp_shard=-1 dropout=0 steps=20 save_freq=4 batch_size=6
        output_dir="$work/out" result="$work/result.safetensors")

for mode in sync async; do
  async=$([ $mode = async ] && echo true || echo false)
  lrhost run "${launch[@]}" --run-dir "$work/run_$mode" "$recipe" "${common[@]}" stop_after=12 \
    save_async=$async 2>&1 | tee "$work/$mode.log"
  [ "$(readlink "$work/out/checkpoints/last")" = "000012" ] || fail "$mode: last should point to 000012"
  lrhost resume "${launch[@]}" --run-dir "$work/run_${mode}_resume" "$work/out" 2>&1 | tee "$work/${mode}_resume.log"
  grep -q "resumed from step 12" "$work/${mode}_resume.log" || fail "$mode: the resume did not start from step 12"
  [ "$(readlink "$work/out/checkpoints/last")" = "000020" ] || fail "$mode: last should point to 000020"
  mv "$work/out" "$work/$mode"
  mv "$work/result.safetensors" "$work/$mode.safetensors"
done

# Every rank of the async side copied and wrote in the background, in both runs; the sync side never.
for log in "$work/run_async/logs" "$work/run_async_resume/logs"; do
  for ((r = 0; r < nproc; r++)); do
    grep -q "copies [1-9][0-9]* bytes to host memory ([1-9][0-9]* of them while the next step's forward and backward run); writing in the background" "$log/rank$r.log" ||
      fail "rank $r did not save asynchronously ($log/rank$r.log)"
  done
done
! grep -q "writing in the background" "$work/sync.log" "$work/sync_resume.log" || fail "the sync side saved asynchronously"

lrhost run --device cpu --run-dir "$work/run_compare" "$recipe" \
  compare="$work/sync.safetensors,$work/async.safetensors" tolerance=0

# The checkpoints, file by file.
config_files=(pretrained_model/train_config.json pretrained_model/train_launch.json)
steps=$(ls "$work/sync/checkpoints" | grep '^[0-9]' | tr '\n' ' ')
[ "$steps" = "000004 000008 000012 000016 000020 " ] || fail "unexpected sync checkpoints: $steps"
[ "$(ls "$work/async/checkpoints" | grep '^[0-9]' | tr '\n' ' ')" = "$steps" ] || fail "async checkpoints differ from sync: $(ls "$work/async/checkpoints")"
compared=0
for step in $steps; do
  a="$work/sync/checkpoints/$step" b="$work/async/checkpoints/$step"
  files=$(cd "$a" && find . -type f | sort)
  [ "$files" = "$(cd "$b" && find . -type f | sort)" ] || fail "$step: the two checkpoints hold different files"
  echo "$files" | grep -q "fsdp_shards/rank_$((nproc - 1)).safetensors" || fail "$step: no shard of rank $((nproc - 1))"
  for file in $files; do
    file=${file#./}
    case " ${config_files[*]} checksums.json " in
      *" $file "*) continue ;;
    esac
    cmp "$a/$file" "$b/$file" || fail "$step/$file differs between the sync and the async save"
    compared=$((compared + 1))
  done
  for file in "${config_files[@]}"; do
    differing=$(diff "$a/$file" "$b/$file" | grep '^[<>]' | grep -vc 'save_async' || true)
    [ "$differing" = 0 ] || fail "$step/$file differs in more than save_async: $(diff "$a/$file" "$b/$file")"
  done
  # checksums.json without the entries of those two files (python3 is installed by scripts/setup).
  without_configs() {
    python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
for f in ("pretrained_model/train_config.json", "pretrained_model/train_launch.json"): m["files"].pop(f)
print(json.dumps(m, sort_keys=True))' "$1"
  }
  without_configs "$a/checksums.json" > "$work/sync_manifest.json" &&
    without_configs "$b/checksums.json" > "$work/async_manifest.json" || fail "$step/checksums.json cannot be read"
  cmp "$work/sync_manifest.json" "$work/async_manifest.json" ||
    fail "$step/checksums.json differs in more than the config entries"
  compared=$((compared + 1))
done
echo "async fsdp resume ok: $nproc ranks, bit-identical result, $compared files byte-identical over checkpoints ${steps% }"
