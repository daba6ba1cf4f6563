#!/usr/bin/env bash
# Preemption (--save-on-signal, docs/multi_gpu.md#preemption) on the shared training loop
# (recipes/preempt_train.lua: a tiny ACT, 12 steps, checkpoints every 4). The signal goes to the
# launcher once rank 0 finished step K, K drawn from SEED (reproducible; 2..8, so it lands mid-run
# and mostly between two regular checkpoints).
#   resume : SIGTERM -> exit 75, "preempted at step S", checkpoint S is complete and verifies; the
#            job continued (`lrhost resume` on one rank, the same command with resume=auto on
#            several) ends with the final weights of an uninterrupted run, within TOLERANCE (0: bit
#            for bit).
#   usr1   : SIGUSR1 (a default save signal) does the same.
#   abort  : a second SIGTERM while the (slowed) preemption save runs: the ranks die at once, the job
#            exits 143, and the newest sound checkpoint is still the regular one before K, which the
#            launcher's report names, saying the step in progress was not saved.
#   none   : --save-on-signal none: SIGTERM interrupts as before (143), nothing saved at the stop.
#   nosave : save_checkpoint=false: exit 75 and "nothing was saved".
# Usage: preempt.sh LRHOST WORK_DIR NPROC TOLERANCE MODE SEED
set -uo pipefail
exe="$1" work="$2" nproc="$3" tolerance="$4" mode="$5" seed="$6"
here="$(cd "$(dirname "$0")" && pwd)"
recipe="$here/recipes/preempt_train.lua"
rm -rf "$work"
mkdir -p "$work"
RANDOM=$seed
k=$((2 + RANDOM % 7))
common=(steps=12 batch_size=2 save_freq=4 log_freq=4 eval_batches=1 step_sleep=0.2)  # >= 0.2 s a step: the signal lands within a step or two of K
pid=""
cleanup() { [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; }
trap cleanup EXIT
fail() { echo "FAILED ($mode, K=$k): $*" >&2; for f in "$work"/*.txt; do echo "== $f" >&2; tail -30 "$f" >&2; done; exit 1; }

# Starts a job in the background: start NAME [lrhost flags] -- [overrides]
start() {
  local name="$1"; shift
  "$exe" run --nproc "$nproc" --device cpu --run-dir "$work/run_$name" "$@" >"$work/$name.txt" 2>&1 &
  pid=$!
}
wait_for() {  # wait_for FILE PATTERN SECONDS
  for _ in $(seq $(($3 * 10))); do
    grep -q "$2" "$1" && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
finish() {  # finish SECONDS -> exit code in $code
  for _ in $(seq $(($1 * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "still running $1 s after the signal"
  wait "$pid"; code=$?; pid=""
}
step_name() { printf "%06d" "$1"; }

case "$mode" in
  resume|usr1|nosave)
    signal=TERM; [ "$mode" = usr1 ] && signal=USR1
    extra=(); [ "$mode" = nosave ] && extra=(save_checkpoint=false)
    start b --max-restarts 1 "$recipe" "${common[@]}" output_dir="$work/b" "${extra[@]}"
    wait_for "$work/b.txt" "^step $k done" 120 || fail "never reached step $k"
    kill -"$signal" "$pid"
    finish 60
    [ "$code" -eq 75 ] || fail "expected exit code 75 (preempted), got $code"
    s=$(sed -n "s/.*preempted at step \([0-9]*\) (signal SIG$signal).*/\1/p" "$work/b.txt" | head -1)
    [ -n "$s" ] || fail "no 'preempted at step N (signal SIG$signal)' line"
    [ "$s" -ge "$k" ] && [ "$s" -lt 12 ] || fail "stopped at step $s, expected $k..11"
    grep -q "restarting the group" "$work/b.txt" && fail "a preemption must not restart the group"
    if [ "$mode" = nosave ]; then
      grep -q "nothing was saved (save_checkpoint = false)" "$work/b.txt" || fail "no 'nothing was saved' line"
      grep -q "no checkpoint was saved" "$work/b.txt" || fail "the launcher claims a checkpoint"
      [ -e "$work/b/checkpoints" ] && fail "a checkpoint folder exists"
      echo "ok: SIGTERM at step $s without checkpoints: exit 75, nothing saved"; exit 0
    fi
    grep -q "checkpoint saved to $work/b/checkpoints/$(step_name "$s")" "$work/b.txt" || fail "no checkpoint named"
    grep -q "continue with:" "$work/b.txt" || fail "the launcher does not say how to continue"
    [ "$(readlink "$work/b/checkpoints/last")" = "$(step_name "$s")" ] || fail "last is not step $s"
    "$exe" checkpoint verify "$work/b/checkpoints/last" >"$work/verify.txt" 2>&1 || fail "checkpoint $s does not verify"
    ls -a "$work/b/checkpoints" | grep -q '^\.tmp-' && fail "a temporary folder was left behind"
    if [ "$mode" = usr1 ]; then echo "ok: SIGUSR1 at step $s: exit 75, checkpoint $s verifies"; exit 0; fi
    # The uninterrupted reference run.
    start a "$recipe" "${common[@]}" output_dir="$work/a"
    finish 300
    [ "$code" -eq 0 ] || fail "the uninterrupted run failed ($code)"
    # Continue: one rank through the printed `lrhost resume`, several by rerunning with resume=auto.
    # The printed line repeats the job's launch flags; on one rank it is run as printed.
    expected="lrhost resume $work/b --nproc $nproc --device cpu --max-restarts 1"
    resume_cmd=$(grep -o "$expected\$" "$work/b.txt" | head -1)
    [ -n "$resume_cmd" ] || fail "no '$expected' line"
    if [ "$nproc" -eq 1 ]; then
      eval "\"\$exe\" ${resume_cmd#lrhost } --run-dir \"\$work/run_c\"" >"$work/c.txt" 2>&1 &
      pid=$!
    else
      start c "$recipe" "${common[@]}" output_dir="$work/b" resume=auto
    fi
    finish 300
    [ "$code" -eq 0 ] || fail "the resumed run failed ($code)"
    grep -q "resume: restored step $s from" "$work/c.txt" || fail "did not resume from step $s"
    grep -q "^step $s done" "$work/c.txt" && fail "step $s ran twice"
    grep -q "^step $((s + 1)) done" "$work/c.txt" || fail "step $((s + 1)) did not run after the resume"
    final=checkpoints/000012/pretrained_model/model.safetensors
    "$exe" run --device cpu --run-dir "$work/run_cmp" "$here/recipes/compare_safetensors.lua" a="$work/a/$final" \
      b="$work/b/$final" tolerance="$tolerance" >"$work/compare.txt" 2>&1 || fail "final weights differ"
    echo "ok: preempted at step $s (signal after step $k), resumed: $(grep 'weights match' "$work/compare.txt")"
    ;;
  abort)
    start b "$recipe" "${common[@]}" output_dir="$work/b" slow_preempt_save=30
    k=$((k < 5 ? 5 : k))  # after the regular checkpoint of step 4
    wait_for "$work/b.txt" "^step $k done" 120 || fail "never reached step $k"
    kill -TERM "$pid"
    wait_for "$work/b.txt" "preemption save starts" 60 || fail "the preemption save never started"
    sleep 2.5  # past the window in which a repeat counts as the same request (stop_request.hpp)
    kill -TERM "$pid"
    finish 20
    [ "$code" -eq 143 ] || fail "expected exit code 143 (aborted by SIGTERM), got $code"
    grep -q "preempted at step" "$work/b.txt" && fail "the aborted save claims to have finished"
    # (The slowed save waits before it writes anything: no half-written folder to name.)
    grep -q "the second signal stopped the ranks before their save-on-signal checkpoint was begun" "$work/b.txt" ||
      fail "the report does not say the step in progress was not saved"
    grep -q "newest complete checkpoint: $work/b/checkpoints/000004 (step 4)" "$work/b.txt" ||
      fail "the report does not name checkpoint 000004 as the newest complete one"
    [ "$(readlink "$work/b/checkpoints/last")" = "000004" ] || fail "last is not the previous checkpoint 000004"
    ls "$work/b/checkpoints" | grep -v '^last$' | grep -qv '^000004$' && fail "a newer complete checkpoint exists"
    "$exe" checkpoint verify "$work/b/checkpoints/last" >"$work/verify.txt" 2>&1 || fail "checkpoint 4 does not verify"
    echo "ok: a second SIGTERM aborted the preemption save; checkpoint 000004 is still the newest and verifies"
    ;;
  none)
    start b --save-on-signal none "$recipe" "${common[@]}" output_dir="$work/b"
    wait_for "$work/b.txt" "^step $k done" 120 || fail "never reached step $k"
    kill -TERM "$pid"
    finish 20
    [ "$code" -eq 143 ] || fail "expected exit code 143 (SIGTERM, no save), got $code"
    grep -q "preempted at step" "$work/b.txt" && fail "saved although --save-on-signal none"
    echo "ok: --save-on-signal none: SIGTERM at step $k interrupts as before (143)"
    ;;
  *) fail "unknown mode $mode" ;;
esac
