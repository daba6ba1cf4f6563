#!/usr/bin/env bash
# Two launchers at once on one host must not collide: each binds its own free store port, both jobs
# succeed. Usage: two_launchers.sh LRHOST WORK_DIR RECIPE
set -uo pipefail
exe="$1" work="$2" recipe="$3"
rm -rf "$work"
mkdir -p "$work"
pids=()
trap 'for p in ${pids[@]+"${pids[@]}"}; do kill -KILL "$p" 2>/dev/null; done' EXIT
for job in a b; do
  LRHOST_TEST_SLEEP=2 timeout -k 5 60 "$exe" --nproc 2 --device cpu --run-dir "$work/$job" "$recipe" \
    >"$work/$job.out" 2>&1 &
  pids+=($!)
done
status=0
for i in 0 1; do
  wait "${pids[$i]}"
  code=$?
  if [ "$code" -ne 0 ]; then
    echo "FAILED: launcher $i exited with $code:" >&2
    cat "$work/$([ "$i" = 0 ] && echo a || echo b).out" >&2
    status=1
  fi
done
pids=()
[ "$status" -eq 0 ] || exit 1
port_a=$(grep -Eo 'master port [0-9]+' "$work/a.out" | sort -u)
port_b=$(grep -Eo 'master port [0-9]+' "$work/b.out" | sort -u)
if [ "$(wc -l <<<"$port_a")" -ne 1 ] || [ "$(wc -l <<<"$port_b")" -ne 1 ] || [ "$port_a" = "$port_b" ]; then
  echo "FAILED: expected one distinct store port per job, got '$port_a' and '$port_b'" >&2
  cat "$work/a.out" "$work/b.out" >&2
  exit 1
fi
echo "ok: both jobs succeeded ($port_a, $port_b)"
