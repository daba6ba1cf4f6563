#!/usr/bin/env bash
# Kill / resume chain (resume.lua with save_freq=1, keep_last=2: a save every step, and an old
# checkpoint deleted after each one). KILLS times: start a training job, SIGKILL either its launcher
# or its rank at a random moment (often in the middle of a save or a deletion), then `lrhost resume`
# the run folder; the resume must finish the run (exit 0, step 20 saved, `checkpoint info` complete).
# Kills come after the first checkpoint; one that still finds none (the job died on its own) counts
# as "early". Prints one summary line: kills, resumed, early, failures; exits non-zero on any failure
# or when fewer than half the kills were resumed (a chain that resumed nothing proves nothing).
# With MODE "async" the saves are asynchronous (save_async=true) and resume must still never pick an
# unfinished checkpoint; the MLP is wider there (hidden=HIDDEN, default 1024: ~13 MB a save instead
# of a few KB), so that a save takes long enough for most kills to land while the background writer
# writes. The summary counts the kills that left an unfinished save (a temporary folder) behind.
# Usage: kill_chain.sh LRHOST WORK_DIR KILLS [SEED] [sync|async]
set -uo pipefail
exe=$1 work=$2 kills=$3
RANDOM=${4:-17}
async=$([ "${5:-sync}" = async ] && echo true || echo false)
width=$([ "$async" = true ] && echo "${HIDDEN:-1024}" || echo 32)
recipe="$(cd "$(dirname "$0")" && pwd)/resume.lua"
rm -rf "$work"
mkdir -p "$work"
resumed=0 early=0 failures=0 mid_save=0 death_to_exit_ms=()
for i in $(seq "$kills"); do
  out="$work/out_$i"
  "$exe" run --nproc 1 --device cpu --run-dir "$work/run_$i" "$recipe" output_dir="$out" \
    steps=20 save_freq=1 keep_last=2 save_async=$async hidden="$width" > "$work/job_$i.log" 2>&1 &
  launcher=$!
  # Wait for the first checkpoint (start-up takes a few seconds), then kill at a random moment of
  # the ~1 s of training that follows: mostly in the middle of a save or a keep_last deletion.
  for _ in $(seq 400); do
    ls "$out/checkpoints" 2>/dev/null | grep -q '^[0-9]' && break
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.05
  done
  sleep "0.$(printf '%03d' $((RANDOM % 1000)))"
  rank=$(pgrep -P "$launcher" -f "lrhost" | head -1)
  if [ $((RANDOM % 2)) -eq 0 ] || [ -z "$rank" ]; then target=$launcher what=launcher; else target=$rank what=rank; fi
  killed_at=$(date +%s%N)
  kill -9 "$target" 2>/dev/null
  # The launcher stops by itself after its rank's death; never wait forever on it.
  for _ in $(seq 200); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.05; done
  kill -9 "$launcher" 2>/dev/null
  wait "$launcher" 2>/dev/null
  # A killed launcher's rank stops on its own (parent watch) a moment later; until it has, it still
  # holds the output folder's lock, and a resume would rightly fail with "in use by another job".
  if [ -n "$rank" ]; then
    for _ in $(seq 200); do kill -0 "$rank" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$rank" 2>/dev/null
  fi
  [ "$what" = rank ] && death_to_exit_ms+=($(( ($(date +%s%N) - killed_at) / 1000000 )))
  if ! ls "$out/checkpoints" 2>/dev/null | grep -q '^[0-9]'; then
    early=$((early + 1))
    echo "kill $i ($what): before the first checkpoint"
    continue
  fi
  ls -a "$out/checkpoints" | grep -q '^\.tmp-' && mid_save=$((mid_save + 1))
  if timeout -k 5 120 "$exe" resume --device cpu --run-dir "$work/resume_$i" "$out" > "$work/resume_$i.log" 2>&1 &&
     [ "$(readlink "$out/checkpoints/last")" = "000020" ] &&
     # (grep reads the whole report: `info | grep -q` under pipefail fails when grep's early exit
     # SIGPIPEs info.)
     "$exe" checkpoint info "$out" | grep "complete: yes" > /dev/null; then
    resumed=$((resumed + 1))
    echo "kill $i ($what): resumed from $(grep -o 'restored step [0-9]*' "$work/resume_$i.log" | head -1)"
  else
    failures=$((failures + 1))
    echo "kill $i ($what): RESUME FAILED (see $work/resume_$i.log)"
    tail -5 "$work/resume_$i.log"
  fi
done
n=${#death_to_exit_ms[@]}
sorted=$(printf '%s\n' "${death_to_exit_ms[@]}" | sort -n)
echo "kill chain: $kills kills, $resumed resumed, $early before the first checkpoint, $failures failures," \
     "$mid_save during a save (a temporary folder left);" \
     "rank SIGKILL to launcher exit ($n kills): median $(echo "$sorted" | sed -n "$(( (n + 1) / 2 ))p") ms," \
     "max $(echo "$sorted" | tail -1) ms"
[ "$failures" -eq 0 ] && [ $((resumed * 2)) -ge "$kills" ]
