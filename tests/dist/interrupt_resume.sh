#!/usr/bin/env bash
# An interrupted run (SIGINT, as Ctrl-C sends) that has saved a checkpoint ends with the
# `lrhost resume <output dir>` line that continues it: printed by the process itself when nothing
# launched it, and by the launcher's interrupt report for a launched job (whose ranks print nothing),
# which also names the newest complete checkpoint. The line repeats the launch flags the job ran with
# (`--nproc N --device cpu`; `--device cpu` for the one process), so running it as printed resumes
# the same job, not a one-process one at a fraction of the batch.
# Both still exit with 128 + SIGINT = 130.
# Usage: interrupt_resume.sh LRHOST WORK_DIR RECIPE NPROC   (NPROC 0: one process, no launcher)
set -uo pipefail
exe="$1" work="$2" recipe="$3" nproc="$4"
rm -rf "$work"
mkdir -p "$work"
out="$work/out.txt"
if [ "$nproc" -eq 0 ]; then
  expected_ready=1
  expected_line="lrhost resume $work/run --device cpu"
  "$exe" run --device cpu --run-dir "$work/run" "$recipe" >"$out" 2>&1 &
else
  expected_ready=$nproc
  expected_line="lrhost resume $work/run --nproc $nproc --device cpu"
  "$exe" run --nproc "$nproc" --device cpu --run-dir "$work/run" "$recipe" >"$out" 2>&1 &
fi
pid=$!
cleanup() { kill -KILL "$pid" 2>/dev/null; }
trap cleanup EXIT
fail() { echo "FAILED: $*" >&2; cat "$out" >&2; exit 1; }

for _ in $(seq 600); do  # up to 60 s for every rank to save and report ready
  [ "$(grep -c 'ready pid' "$out")" -ge "$expected_ready" ] && break
  kill -0 "$pid" 2>/dev/null || fail "the run exited before it was ready"
  sleep 0.1
done
[ "$(grep -c 'ready pid' "$out")" -ge "$expected_ready" ] || fail "the run never reported ready"
kill -INT "$pid"
for _ in $(seq 150); do  # up to 15 s to stop
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$pid" 2>/dev/null && fail "still running 15 s after SIGINT"
wait "$pid"
code=$?
[ "$code" -eq 130 ] || fail "expected exit code 130 (SIGINT), got $code"
grep -q "continue this run from its newest checkpoint with:" "$out" || fail "no resume hint"
[ "$(grep -c "^  $expected_line\$" "$out")" -eq 1 ] || fail "the hint is not one '$expected_line' line"
if [ "$nproc" -gt 0 ]; then
  # The launcher's report names the newest complete checkpoint and says the later steps are unsaved.
  grep -q "newest complete checkpoint: $work/run/checkpoints/000001 (step 1); the steps after it were not saved" "$out" ||
    fail "the report does not name the newest complete checkpoint"
fi
echo "ok: the interrupted run names '$expected_line'"
