#!/usr/bin/env bash
# A run folder belongs to one run (see host/launch/run_lock.hpp, run_dir.hpp, util/log_file.hpp).
# Usage: run_folder.sh LRHOST WORK_DIR RECIPES_DIR CASE, CASE one of
#   lock           a second job on a busy --run-dir fails at once naming the holder's pid; the first
#                  job finishes fine and its logs never see the second one
#   reuse          jobs one after another in one run folder append to its logs under attempt headers
#   default_names  jobs of one recipe started at the same moment get a default folder each
#   resume         `lrhost resume` logs into the run folder it continues, not a new one
#   output_lock    a second job with its own --run-dir but the busy job's output_dir fails at once
#                  naming the holder (the first job's rank 0, whose run folder is that output_dir);
#                  the first job finishes fine, and the lock is free again when a job ends or is killed
# Every lrhost call has a hard timeout; background jobs are killed on exit.
set -uo pipefail
exe="$1" work="$2" recipes="$3" case="$4"
rm -rf "$work"
mkdir -p "$work"
pids=()
trap 'for p in ${pids[@]+"${pids[@]}"}; do kill -KILL "$p" 2>/dev/null; done' EXIT
fail() { echo "FAILED ($case): $*" >&2; exit 1; }
lrhost() { timeout -k 5 60 "$exe" "$@"; }
count() { grep -Ec -- "$1" "$2" 2>/dev/null || true; }

case "$case" in
  lock)
    run="$work/run"
    # The first job's launcher is started directly (not under `timeout`) so $! is its pid.
    LRHOST_TEST_SLEEP=12 "$exe" --nproc 2 --device cpu --run-dir "$run" "$recipes/print_rank.lua" >"$work/a.out" 2>&1 &
    first=$!
    pids+=("$first")
    for _ in $(seq 100); do grep -q "\"pid\":$first" "$run/.lock" 2>/dev/null && break; sleep 0.1; done
    grep -q "\"pid\":$first" "$run/.lock" 2>/dev/null || fail "the first job never wrote its lock file"
    for launch in "--nproc 2" ""; do  # a second launcher, then a second in-process run
      start=$(date +%s)
      # shellcheck disable=SC2086
      out=$(lrhost $launch --device cpu --run-dir "$run" "$recipes/print_rank.lua" 2>&1)
      code=$?
      [ "$code" -ne 0 ] || fail "a second job (${launch:-in process}) on a busy run folder succeeded:
$out"
      [ $(($(date +%s) - start)) -le 8 ] || fail "the second job did not fail at once (the first sleeps 12 s)"
      grep -Eq "run folder '$run' is in use by another job: pid $first on host [^ ]+ \(started " <<<"$out" ||
        fail "the error does not name the holder (pid $first):
$out"
      grep -q "^rank " <<<"$out" && fail "the second job ran its recipe:
$out"
    done
    wait "$first"
    code=$?
    pids=()
    [ "$code" -eq 0 ] || fail "the first job exited with $code: $(cat "$work/a.out")"
    [ "$(count '^===== attempt' "$run/logs/launcher.log")" -eq 1 ] || fail "launcher.log holds another job's header"
    [ "$(count '^===== attempt' "$run/logs/rank0.log")" -eq 1 ] || fail "rank0.log holds another job's header"
    [ ! -e "$run/errors/rank0.json" ] || fail "the refused job wrote an error file into the busy folder"
    ;;
  reuse)
    run="$work/run"
    lrhost --nproc 2 --device cpu --run-dir "$run" "$recipes/print_rank.lua" >/dev/null 2>&1 || fail "job 1 failed"
    lrhost --nproc 2 --device cpu --run-dir "$run" "$recipes/print_rank.lua" >/dev/null 2>&1 || fail "job 2 failed"
    lrhost --device cpu --run-dir "$run" "$recipes/print_rank.lua" >/dev/null 2>&1 || fail "job 3 failed"
    for want in '^===== attempt 1 \(restart 0\) started [0-9T:-]+Z pid [0-9]+ =====$' \
                '^===== attempt 2 \(restart 0\) started ' '^===== attempt 3 started '; do
      [ "$(count "$want" "$run/logs/rank0.log")" -eq 1 ] || fail "rank0.log lacks '$want':
$(cat "$run/logs/rank0.log")"
    done
    [ "$(count '^===== attempt 2 \(restart 0\) started ' "$run/logs/rank1.log")" -eq 1 ] || fail "rank1.log lacks attempt 2"
    [ "$(count '^===== attempt 2 started ' "$run/logs/launcher.log")" -eq 1 ] || fail "launcher.log lacks attempt 2"
    # Every job's own lines are still there: nothing was truncated.
    [ "$(count 'rank 0 of 2 \(pid' "$run/logs/rank0.log")" -eq 2 ] || fail "rank0.log lost a job's lines"
    [ "$(count 'starting 2 cpu rank' "$run/logs/launcher.log")" -eq 2 ] || fail "launcher.log lost a job's lines"
    ;;
  default_names)
    cd "$work" || exit 1
    # Three jobs at once: at least two of them start within one second (the folder name's
    # resolution), where a name without a claim would be shared. Two launchers, one plain run.
    for job in a b c; do
      launch=(--nproc 1)
      [ "$job" = c ] && launch=()
      LRHOST_TEST_SLEEP=1 timeout -k 5 60 "$exe" "${launch[@]}" --device cpu "$recipes/print_rank.lua" \
        >"$work/$job.out" 2>&1 &
      pids+=($!)
    done
    for i in 0 1 2; do wait "${pids[$i]}" || fail "job $i failed: $(cat "$work"/?.out)"; done
    pids=()
    folders=$(find "$work/outputs/lrhost" -mindepth 1 -maxdepth 1 -type d -name '*_print_rank*' | sort)
    [ "$(wc -l <<<"$folders")" -eq 3 ] || fail "expected three run folders, got:
$folders"
    for folder in $folders; do
      [ ! -e "$folder/logs/launcher.log" ] || [ "$(count '^===== attempt' "$folder/logs/launcher.log")" -eq 1 ] ||
        fail "$folder/logs/launcher.log mixes two jobs"
      [ "$(count '^===== attempt' "$folder/logs/rank0.log")" -eq 1 ] || fail "$folder/logs/rank0.log mixes two jobs"
    done
    ;;
  resume)
    run="$work/run"
    recipe="$(cd "$recipes/.." && pwd)/resume.lua"
    lrhost --device cpu --run-dir "$run" "$recipe" output_dir="$run" stop_after=10 >"$work/a.out" 2>&1 ||
      fail "the first run failed: $(cat "$work/a.out")"
    [ -d "$run/checkpoints/000010" ] || fail "the first run saved no step 10"
    cd "$work" || exit 1
    lrhost resume --device cpu "$run/checkpoints/last" >"$work/resume.out" 2>&1 || fail "resume failed: $(cat "$work/resume.out")"
    grep -q "resumed from step 10" "$work/resume.out" || fail "the resumed run did not start from step 10"
    [ ! -e "$work/outputs" ] || fail "resume created a new run folder: $(find "$work/outputs" -maxdepth 2)"
    [ "$(count '^===== attempt' "$run/logs/rank0.log")" -eq 2 ] || fail "rank0.log of the run folder lacks the resume's attempt:
$(grep -E '^=====' "$run/logs/rank0.log")"
    grep -q "run dir $run, recipe .*train_recipe.lua" "$run/logs/rank0.log" || fail "the resumed rank did not log into $run"
    ;;
  output_lock)
    out="$work/out"
    recipe="$recipes/hold_output_dir.lua"
    # The first job: two ranks, its run folder is its output folder (as the front door sets them).
    "$exe" --nproc 2 --device cpu --run-dir "$out" "$recipe" output_dir="$out" hold=10 >"$work/a.out" 2>&1 &
    first=$!
    pids+=("$first")
    for _ in $(seq 150); do grep -q "^rank 0 ready" "$work/a.out" && break; sleep 0.1; done
    holder=$(sed -n 's/^rank 0 ready pid \([0-9]*\)$/\1/p' "$work/a.out")
    [ -n "$holder" ] || fail "the first job never got ready: $(cat "$work/a.out")"
    for launch in "--nproc 2" ""; do  # a second launcher, then a second in-process run
      start=$(date +%s)
      # shellcheck disable=SC2086
      got=$(lrhost $launch --device cpu --run-dir "$work/b" "$recipe" output_dir="$out" 2>&1)
      [ $? -ne 0 ] || fail "a second job (${launch:-in process}) on a busy output_dir succeeded:
$got"
      [ $(($(date +%s) - start)) -le 8 ] || fail "the second job did not fail at once (the first holds 10 s)"
      grep -Eq "output folder '[^']*/out' is in use by another job: pid $holder on host [^ ]+ \(started " <<<"$got" ||
        fail "the error does not name the holder (rank 0, pid $holder):
$got"
      grep -q "rank 0 ready" <<<"$got" && fail "the second job's rank 0 went past lr.checkpoint:
$got"
    done
    wait "$first"
    code=$?
    pids=()
    [ "$code" -eq 0 ] || fail "the first job exited with $code: $(cat "$work/a.out")"
    [ "$(ls "$out/checkpoints")" = "$(printf '000001\nlast')" ] || fail "checkpoints/ holds: $(ls "$out/checkpoints")"
    # Released when the job ended: the next one runs.
    lrhost --device cpu --run-dir "$work/c" "$recipe" output_dir="$out" resume=auto save=false >"$work/c.out" 2>&1 ||
      fail "a job after the first one ended was refused: $(cat "$work/c.out")"
    # Released when the holder is killed: a job killed by SIGKILL never blocks the next one.
    "$exe" --device cpu --run-dir "$work/d" "$recipe" output_dir="$out" resume=auto hold=-1 >"$work/d.out" 2>&1 &
    killed=$!
    pids+=("$killed")
    for _ in $(seq 150); do grep -q "^rank 0 ready" "$work/d.out" && break; sleep 0.1; done
    grep -q "^rank 0 ready pid $killed$" "$work/d.out" || fail "the job to kill never got ready: $(cat "$work/d.out")"
    kill -KILL "$killed"
    wait "$killed" 2>/dev/null
    pids=()
    lrhost --device cpu --run-dir "$work/e" "$recipe" output_dir="$out" resume=auto save=false >"$work/e.out" 2>&1 ||
      fail "a job after the holder was killed was refused: $(cat "$work/e.out")"
    ;;
  *) echo "run_folder.sh: unknown case $case" >&2; exit 2 ;;
esac
echo "ok: $case"
