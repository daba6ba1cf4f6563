#!/usr/bin/env bash
# A signal sent to the launcher (SIGTERM from a scheduler, SIGINT from Ctrl-C) is forwarded to
# every rank; the ranks are gone when the launcher exits with 128 + signal.
# Usage: interrupt.sh LRHOST WORK_DIR RECIPE SIGNAL EXPECTED_EXIT
set -uo pipefail
exe="$1" work="$2" recipe="$3" signal="$4" expected="$5"
rm -rf "$work"
mkdir -p "$work"
out="$work/launcher.out"
"$exe" --nproc 2 --device cpu --run-dir "$work/run" "$recipe" >"$out" 2>&1 &
launcher=$!
rank_pids=()
cleanup() {
  kill -KILL "$launcher" 2>/dev/null
  for p in ${rank_pids[@]+"${rank_pids[@]}"}; do kill -KILL "$p" 2>/dev/null; done
}
trap cleanup EXIT
fail() { echo "FAILED: $*" >&2; cat "$out" >&2; exit 1; }

for _ in $(seq 300); do  # up to 30 s for both ranks to start
  [ "$(grep -c 'ready pid' "$out")" -ge 2 ] && break
  kill -0 "$launcher" 2>/dev/null || fail "the launcher exited before both ranks were ready"
  sleep 0.1
done
mapfile -t rank_pids < <(grep -Eo 'ready pid [0-9]+' "$out" | awk '{print $3}')
[ "${#rank_pids[@]}" -eq 2 ] || fail "expected two ranks to report ready"

kill "-$signal" "$launcher"
for _ in $(seq 150); do  # up to 15 s to stop
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$launcher" 2>/dev/null && fail "the launcher still runs 15 s after SIG$signal"
wait "$launcher"
code=$?
[ "$code" -eq "$expected" ] || fail "expected exit code $expected, got $code"
for p in "${rank_pids[@]}"; do
  kill -0 "$p" 2>/dev/null && fail "rank process $p still runs after the launcher exited"
done
grep -q "interrupted by SIG$signal" "$out" || fail "no 'interrupted by SIG$signal' report"
grep -Eq "rank [01]: stopped by the launcher with SIG$signal" "$out" || fail "the report does not say the ranks were stopped"
rank_pids=()
echo "ok: SIG$signal stopped the job, exit $code"
