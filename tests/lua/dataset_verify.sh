#!/usr/bin/env bash
# `lrhost dataset verify` on the synthetic dataset and on broken copies of it: the intact dataset
# passes (exit 0, "0 problems"); a truncated data parquet, a truncated mp4 and a wrong total_frames
# in info.json are each named with their file (exit 1), and all three at once are all listed. The
# truncated mp4 breaks the same checks in every episode after the cut: those are one line per cause
# with the episode range and a count, not one line per episode.
# Usage: dataset_verify.sh LRHOST WORK_DIR
set -euo pipefail
exe=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
lrhost() { timeout 120 "$exe" "$@"; }
data=data/chunk-000/file-000.parquet
video=videos/observation.images.top/chunk-000/file-000.mp4
halve() { truncate -s $(( $(stat -c %s "$1") / 2 )) "$1"; }
# verify_fails NAME: runs verify on $work/NAME, which must exit 1 (problems found, no crash).
verify_fails() {
  local code=0
  lrhost dataset verify "$work/$1" > "$work/$1.txt" 2>&1 || code=$?
  cat "$work/$1.txt"
  [ "$code" -eq 1 ] || fail "$1: expected exit code 1, got $code"
}

lrhost dataset synth --out "$work/ok" --episodes 12 --max-length 20 --image-size 32
lrhost dataset verify "$work/ok" | tee "$work/ok.txt"
grep -q "1 parquet files .*1 video files .*; 0 problems" "$work/ok.txt" || fail "the intact dataset should pass"

cp -r "$work/ok" "$work/parquet"
halve "$work/parquet/$data"
verify_fails parquet
grep -q "problem: $work/parquet/$data: " "$work/parquet.txt" || fail "the truncated parquet file is not named"

cp -r "$work/ok" "$work/mp4"
halve "$work/mp4/$video"
verify_fails mp4
grep -q "problem: $work/mp4/$video: " "$work/mp4.txt" || fail "the truncated mp4 is not named"
lines=$(grep -c "problem: $work/mp4/$video: " "$work/mp4.txt")
[ "$lines" -le 4 ] || fail "the truncated mp4 takes $lines lines; expected at most 4 (one per cause)"
grep -Eq "frame times with no frame within tolerance_s=[0-9.e-]+: episodes [0-9, -]*-11 \([0-9]+ frame times in [0-9]+ episodes\); first: episode [0-9]+: t=" \
  "$work/mp4.txt" || fail "the missing frames are not grouped into one line with the episode range and count"

cp -r "$work/ok" "$work/frames"
sed -i -E 's/"total_frames": [0-9]+/"total_frames": 9999/' "$work/frames/meta/info.json"
verify_fails frames
grep -q "problem: $work/frames/meta/info.json: .*total_frames=9999" "$work/frames.txt" || fail "total_frames is not named"

cp -r "$work/ok" "$work/all"
halve "$work/all/$data"
halve "$work/all/$video"
sed -i -E 's/"total_frames": [0-9]+/"total_frames": 9999/' "$work/all/meta/info.json"
verify_fails all
for part in "$data" "$video" meta/info.json; do
  grep -q "problem: $work/all/$part: " "$work/all.txt" || fail "with three problems, $part is not listed"
done
echo "ok: every broken file named"
