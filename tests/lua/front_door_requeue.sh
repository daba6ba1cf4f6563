#!/usr/bin/env bash
# The documented requeue loop (docs/multi_gpu.md#preemption: rerun the same command after exit 75)
# with lrhost lerobot-train's command line: a preempted front-door run is continued by the same
# command, which says so; rerunning it once the run is finished trains nothing and says that too;
# a different command on the same --output_dir is still refused, as lerobot-train refuses it.
# Usage: front_door_requeue.sh LRHOST WORK_DIR
set -uo pipefail
exe=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log; do echo "== $f" >&2; tail -20 "$f" >&2; done; exit 1; }
pid=""
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null' EXIT
export HF_LEROBOT_HOME="$work/lerobot_home" OMP_NUM_THREADS=1
# lerobot-train's ACT starts from torchvision's ImageNet backbone (a stand-in, tests/lua/backbone_weights.sh).
export TORCH_HOME="$work/torch_home"
"${LRHOST_PYTHON:-python3}" "$(dirname "$0")/fake_resnet18_pth.py" "$TORCH_HOME" || fail "no stand-in backbone"
timeout 120 "$exe" dataset synth --out "$HF_LEROBOT_HOME/user/push" --episodes 4 --max-length 12 > "$work/synth.log" 2>&1 ||
  fail "dataset synth failed"
out="$work/out"
command=(lerobot-train --policy.type=act --dataset.repo_id=user/push --steps=60 --save_freq=30 --log_freq=1
         --batch_size=2 --policy.device=cpu --output_dir="$out" --num_workers=1 --policy.dim_model=32
         --policy.dim_feedforward=64 --policy.n_encoder_layers=1 --policy.n_vae_encoder_layers=1
         --policy.chunk_size=4 --policy.n_action_steps=1)

# 1. The job is preempted (SIGTERM, as Slurm's --signal or scancel send) a few steps in: exit 75.
# Two logged steps mean the loop has asked for stop requests (its handlers are armed). The run is
# frozen (SIGSTOP) as soon as they are seen, so however fast this machine trains, the signal lands
# long before step 60; SIGCONT then lets it finish its step, save and exit.
"$exe" "${command[@]}" > "$work/first.log" 2>&1 &
pid=$!
for _ in $(seq 12000); do  # up to 120 s for two logged steps
  [ "$(grep -c '"step"' "$out/metrics.jsonl" 2>/dev/null)" -ge 2 ] && break
  kill -0 "$pid" 2>/dev/null || fail "the first run ended before it was preempted"
  sleep 0.01
done
kill -STOP "$pid"
kill -TERM "$pid"
kill -CONT "$pid"
timeout 120 tail --pid="$pid" -f /dev/null
wait "$pid"; code=$?; pid=""
[ "$code" -eq 75 ] || fail "the preempted run exited $code, expected 75"
s=$(sed -n 's/.*preempted at step \([0-9]*\) (signal SIGTERM).*/\1/p' "$work/first.log" | head -1)
[ -n "$s" ] && [ "$s" -lt 60 ] || fail "no 'preempted at step N' line before step 60"

# 2. The requeued job runs the same command: it continues from step S and finishes.
timeout 300 "$exe" "${command[@]}" > "$work/requeued.log" 2>&1 || fail "the requeued command failed"
grep -q "holds checkpoints of this same command (newest: step $s; e.g. a requeued job): continuing that run" \
  "$work/requeued.log" || fail "the requeued command does not say it continues the run"
grep -q "resume: restored step $s from" "$work/requeued.log" || fail "the requeued command did not resume from step $s"
[ -f "$out/checkpoints/000060/pretrained_model/model.safetensors" ] || fail "the requeued run did not reach step 60"

# 3. Once more, the run being finished: nothing trains, and it says how to train further (exit 0).
timeout 300 "$exe" "${command[@]}" > "$work/finished.log" 2>&1 || fail "rerunning the finished command failed"
grep -q "000060 is already at step 60 of 60 (.*): the run is finished and trains no step; pass steps=M (or --steps=M" \
  "$work/finished.log" || fail "rerunning the finished run does not say it is finished"

# 4. Another command on the same folder is refused, naming the folder and --overwrite.
if timeout 300 "$exe" "${command[@]/--batch_size=2/--batch_size=4}" > "$work/other.log" 2>&1; then
  fail "a different command continued the run"
fi
grep -q "already holds checkpoints of another run" "$work/other.log" || fail "the other command's refusal is unclear"
echo "ok: preempted at step $s, the same command continued to 60, the finished rerun said so, another was refused"
