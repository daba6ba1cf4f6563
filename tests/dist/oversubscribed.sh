#!/usr/bin/env bash
# More CPU ranks than hardware threads: the launcher warns in one line naming both numbers, and the
# job still runs. Starts threads + 1 ranks, so it is skipped (exit 77) where that would be many.
# Usage: oversubscribed.sh LRHOST RUN_DIR RECIPE
set -uo pipefail
exe="$1" run_dir="$2" recipe="$3"
threads=$(getconf _NPROCESSORS_ONLN)
if [ "$threads" -gt 8 ]; then
  echo "skipped: $threads hardware threads would need $((threads + 1)) ranks"
  exit 77
fi
nproc=$((threads + 1))
exec bash "$(dirname "$0")/expect_launch.sh" "$exe" "$run_dir" \
  --match "warning.*--nproc $nproc starts $nproc CPU ranks but this machine has $threads hardware thread\\(s\\)" \
  --match "^rank $threads of $nproc " \
  -- --nproc "$nproc" --device cpu --run-dir "$run_dir" "$recipe"
