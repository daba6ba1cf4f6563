#!/usr/bin/env bash
# The launcher names the rank that raised, not the peer whose collective failed in the same instant,
# every time: REPS jobs of NPROC CPU ranks where rank FAIL_RANK raises after a barrier while the
# others enter an all-reduce (recipes/raise_after_collective.lua). Each job has a hard timeout.
# Usage: root_cause.sh LRHOST WORK_DIR RECIPE NPROC FAIL_RANK REPS
set -uo pipefail
exe="$1" work="$2" recipe="$3" nproc="$4" fail_rank="$5" reps="$6"
rm -rf "$work"
mkdir -p "$work"
named=0 wrong=()
start_ms=$(($(date +%s%N) / 1000000))
for i in $(seq "$reps"); do
  out="$work/run$i.out"
  LRHOST_TEST_FAIL_RANK="$fail_rank" timeout -k 5 30 "$exe" --nproc "$nproc" --device cpu --run-dir "$work/run$i" \
    "$recipe" >"$out" 2>&1
  code=$?
  if [ "$code" -eq 1 ] && grep -Eq "job failed: rank $fail_rank failed first" "$out" &&
     grep -Eq "error: .*rank $fail_rank failed on purpose" "$out"; then
    named=$((named + 1))
  else
    wrong+=("$i")
  fi
done
elapsed_ms=$(($(date +%s%N) / 1000000 - start_ms))
if [ "${#wrong[@]}" -gt 0 ]; then
  for i in "${wrong[@]}"; do
    echo "----- run $i (rank $fail_rank of $nproc raised) -----" >&2
    cat "$work/run$i.out" >&2
  done
  echo "FAILED: the cause (rank $fail_rank of $nproc) was named in $named of $reps runs" >&2
  exit 1
fi
echo "ok: rank $fail_rank of $nproc named as the cause in $named of $reps runs ($((elapsed_ms / reps)) ms per job)"
