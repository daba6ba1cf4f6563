#!/usr/bin/env bash
# A frame-weighted lrhost mixture against LeRobot 0.6.1's merge of the same datasets:
# make_lerobot_dataset.py writes three small datasets (LeRobot's writer: AV1 video camera and PNG image
# camera, different seeds and episode counts; --no-extra because LeRobot's merge cannot rewrite the
# 2-D column, and the merge needs identical features, so all three have the image camera),
# merge_datasets.py merges them with LeRobot's own merge, and mixture_merge_check.lua compares
# lr.dataset.lerobot{root = merged} with lr.dataset.mixture{A, B, C} frame by frame, the pooled stats
# and a delta window. Then per-dataset stats: a policy built on the mixture with stats = "per_dataset"
# saves each dataset's processors, and LeRobot's pipeline of each normalizes that dataset's samples
# bit for bit as lrhost's per-sample normalization did (per_dataset_stats_write.lua, _check.py).
#
#   run_mixture_merge_interop.sh LRHOST_EXE WORK_DIR
# Exits 77 (ctest's skip code) without the oracle's python, 1 on any mismatch.
set -euo pipefail
lrhost="${1:?lrhost executable}"
work="${2:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=oracle_python.sh
source "$here/oracle_python.sh"
require_oracle_python "lerobot.datasets.lerobot_dataset, lerobot.datasets.dataset_tools"
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1 LRHOST_RUN_DIR="$work/runs"
start=$SECONDS
step() { printf '[interop mixture_merge +%ds] %s\n' $((SECONDS - start)) "$*"; }
quiet() { # quiet LOG ARGS...: one command, killed after 120 s; its output only when it fails
  local log=$1
  shift
  if ! timeout 120 "$@" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "FAIL: $*" >&2
    exit 1
  fi
}

# name episodes seed: 2 + 3 + 1 episodes (23+31, 23+31+17, 23 frames at 30 fps; episode 2 has two tasks).
roots=()
for spec in "a 2 11" "b 3 22" "c 1 33"; do
  read -r name episodes seed <<<"$spec"
  step "make_lerobot_dataset $name (--episodes $episodes --seed $seed)"
  quiet "$work/make_$name.log" "$py" "$here/make_lerobot_dataset.py" "$work/$name" --episodes "$episodes" \
    --seed "$seed" --no-extra --height 24 --width 32
  roots+=("$work/$name")
done
step "merge_datasets (LeRobot's merge)"
quiet "$work/merge.log" "$py" "$here/merge_datasets.py" "$work/merged" "${roots[@]}"
grep '^merge_datasets ' "$work/merge.log" | cut -c1-160

step "mixture_merge_check.lua"
quiet "$work/check.log" "$lrhost" "$here/mixture_merge_check.lua" merged="$work/merged" \
  roots="$(IFS=,; echo "${roots[*]}")"
grep '^mixture_merge_check: \|^ok: ' "$work/check.log"

# dataset.stats = "per_dataset": LeRobot loads each dataset's saved pipeline and normalizes that
# dataset's samples exactly as lrhost did in training (per_dataset_stats_write.lua / _check.py).
step "per_dataset_stats_write.lua"
quiet "$work/per_write.log" "$lrhost" "$here/per_dataset_stats_write.lua" roots="$(IFS=,; echo "${roots[*]}")" \
  out="$work/per_dataset"
step "per_dataset_stats_check.py (LeRobot's pipelines)"
quiet "$work/per_check.log" "$py" "$here/per_dataset_stats_check.py" "$work/per_dataset" "${roots[@]}"
grep '^per_dataset_stats_check: \|^ok: ' "$work/per_check.log"
step "done"
