#!/usr/bin/env bash
# Watching and judging a run end to end through the real binary (docs/monitoring.md):
#   - a 2-rank ACT run with eval_freq writes metrics.jsonl (training and eval/ records, phase
#     timings), TensorBoard events, eval/<step>/summary.json and a rollout video, and draws no status
#     line off a terminal;
#   - `lrhost resume` continues metrics.jsonl without duplicating the steps the interrupted run had
#     logged after its checkpoint;
#   - `lrhost eval` gives the same per-episode results on 1 and 2 ranks (episode e has seed 100000 + e
#     wherever it runs), logs its progress off a terminal, and never replaces an earlier evaluation;
#   - errors: eval_freq with FSDP, a folder that is no checkpoint.
# Usage: closed_loop_eval.sh LRHOST WORK_DIR REPO_DIR. Every call has a hard timeout.
set -uo pipefail
exe="$1" work="$2" repo="$3"
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAILED: $*" >&2; exit 1; }
lrhost() { timeout -k 5 240 "$exe" "$@"; }
tiny=(policy.dim_model=32 policy.dim_feedforward=64 policy.n_encoder_layers=1 policy.n_vae_encoder_layers=1
      policy.n_heads=2 batch_size=4 num_workers=1 eval_batches=2)
run="$work/run"

out=$(lrhost --nproc 2 --device cpu --run-dir "$work/train.run" "$repo/recipes/act_ddp.lua" "${tiny[@]}" steps=4 \
  log_freq=2 save_freq=4 eval_freq=2 eval.episodes=3 eval.videos=1 output_dir="$run" 2>&1) || fail "training failed:
$out"
grep -q $'\r' <<<"$out" && fail "a status line was drawn off a terminal"
grep -Eq "step 2/4 \(50.0%\) \| [0-9.]+ steps/s \| [0-9.]+ samples/s \| elapsed [0-9:]+ \| ETA [0-9:?]+ \| loss [0-9.]+ \| .*data_s=" \
  <<<"$out" || fail "no progress fields in the log line:
$out"
python3 - "$run" <<'PY' || fail "metrics.jsonl or the evaluation output is wrong"
import json, os, sys
run = sys.argv[1]
records = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]
train = [r for r in records if "loss" in r]
evals = [r for r in records if "eval/success_rate" in r]
assert [r["step"] for r in train] == [2, 4], records
assert [r["step"] for r in evals] == [2, 4], records
for r in train:
    for key in ("time", "data_s", "forward_s", "backward_s", "optimizer_s", "step_s", "samples_per_s", "peak_rss_gib", "lr"):
        assert key in r, (key, r)
    # Each phase is the slowest rank's: none exceeds the slowest step, and together they cover it
    # (on one rank they add up to step_s exactly; unit.test_metrics checks that).
    phases = [v for k, v in r.items() if k.endswith("_s") and k not in ("step_s", "samples_per_s")]
    assert all(p <= r["step_s"] * (1 + 1e-9) for p in phases), r
    assert sum(phases) >= r["step_s"] * (1 - 1e-6), r
summary = json.load(open(os.path.join(run, "eval", "000004", "summary.json")))
assert summary["episodes"] == 3 and len(summary["per_episode"]) == 3, summary
assert [e["seed"] for e in summary["per_episode"]] == [100000, 100001, 100002], summary
low, high = summary["success_ci95"]
assert 0 <= low <= summary["success_rate"] <= high <= 1, summary
assert os.path.getsize(os.path.join(run, "eval", "000002", "videos", "episode_000.mp4")) > 1000
assert not os.path.exists(os.path.join(run, "eval", "000002", "videos", "episode_001.mp4"))
assert any(f.startswith("events.out.tfevents.") for f in os.listdir(os.path.join(run, "tensorboard")))
PY

# The run was interrupted after logging step 6 past its step-4 checkpoint: the resumed run replaces it.
echo '{"step":6,"time":1,"loss":12345}' >>"$run/metrics.jsonl"
out=$(lrhost resume "$run" --nproc 2 --device cpu steps=6 2>&1) || fail "resume failed:
$out"
python3 - "$run" <<'PY' || fail "the resumed metrics.jsonl has duplicated or stale steps"
import json, os, sys
records = [json.loads(line) for line in open(os.path.join(sys.argv[1], "metrics.jsonl"))]
train = [r["step"] for r in records if "loss" in r]
assert train == [2, 4, 6], train
assert all(r.get("loss") != 12345 for r in records), records
PY

# lrhost eval: the same episodes on 1 and 2 ranks; training already evaluated step 6 (eval_freq), so
# these go to 000006_2 and 000006_3
lrhost eval "$run" --episodes 4 --videos 0 --run-dir "$work/eval1.run" >"$work/eval1.out" 2>&1 || fail "eval on 1 rank failed: $(cat "$work/eval1.out")"
lrhost eval "$run" --episodes 4 --videos 0 --nproc 2 --device cpu --run-dir "$work/eval2.run" >"$work/eval2.out" 2>&1 \
  || fail "eval on 2 ranks failed: $(cat "$work/eval2.out")"
grep -q "success [0-9]/4 = .*summary: $run/eval/000006_2/summary.json" "$work/eval1.out" || fail "$(cat "$work/eval1.out")"
# Off a terminal, `lrhost eval` logs its progress (episodes done, success so far, ETA) as it goes.
grep -Eq "eval: episode 2/4 \(50.0%\) \| success [0-2]/2 .*episodes/s \| elapsed [0-9:]+ \| ETA [0-9:]+" "$work/eval1.out" ||
  fail "no progress line half-way: $(cat "$work/eval1.out")"
grep -Eq "eval: episode 4/4 \(100.0%\) \| success [0-2]/2 (\([0-9.]+%\) )?on rank 0" "$work/eval2.out" ||
  fail "no progress line on 2 ranks: $(cat "$work/eval2.out")"
python3 - "$run" <<'PY' || fail "1 and 2 ranks disagree"
import json, os, sys
one = json.load(open(os.path.join(sys.argv[1], "eval", "000006_2", "summary.json")))
two = json.load(open(os.path.join(sys.argv[1], "eval", "000006_3", "summary.json")))
during_training = json.load(open(os.path.join(sys.argv[1], "eval", "000006", "summary.json")))
assert during_training["episodes"] == 3, during_training
assert one["per_episode"] == two["per_episode"], (one, two)
assert one["episodes"] == 4
PY

# On a terminal (script(1) gives the job one): rank 0 redraws one status line in place, and removes it
# when the loop ends, so the lines after training print without it.
command=$(printf '%q ' "$exe" --nproc 2 --device cpu --run-dir "$work/tty.run" "$repo/recipes/act_ddp.lua" \
  "${tiny[@]}" steps=6 log_freq=3 output_dir="$work/tty")
timeout -k 5 240 script -qfec "$command" "$work/tty.typescript" >/dev/null 2>&1 ||
  fail "the run on a terminal failed: $(tail -5 "$work/tty.typescript")"
python3 - "$work/tty.typescript" <<'PY' || fail "the status line on a terminal is wrong"
import re, sys
text = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
found = list(re.finditer(r"\r\x1b\[Kstep ([1-6])/6 \(", text))
draws = [m.start() for m in found]
steps = [int(m.group(1)) for m in found]
assert len(draws) >= 2, text[-2000:]
assert "step 6/6 (100.0%)" in text, text[-2000:]
# One drawer: the steps shown never go back (two ranks drawing would interleave their steps).
assert steps == sorted(steps), steps
held_out = text.index("held-out action MSE")
assert draws[-1] < held_out, "the status line was redrawn after the loop ended"
PY

out=$(lrhost "$repo/recipes/act_fsdp.lua" "${tiny[@]}" steps=2 eval_freq=1 output_dir="$work/fsdp" --run-dir "$work/fsdp.run" 2>&1) \
  && fail "eval_freq with FSDP was accepted"
grep -q "eval_freq > 0 is not supported with FSDP" <<<"$out" || fail "unclear FSDP error: $out"
lrhost dataset synth --out "$work/other" --episodes 4 --max-length 12 >/dev/null 2>&1 || fail "dataset synth failed"
sed -i 's/"robot_type": *"lrhost_push2d"/"robot_type": "so100"/' "$work/other/meta/info.json"
out=$(lrhost "$repo/recipes/act_ddp.lua" "${tiny[@]}" steps=2 eval_freq=1 eval_episodes=1 dataset.root="$work/other" \
  output_dir="$work/other_run" --run-dir "$work/other.run" 2>&1) && fail "eval_freq on a dataset without a simulator was accepted"
grep -q "only the built-in pushing task has one (dataset $work/other is robot_type 'so100')" <<<"$out" ||
  fail "unclear error for a dataset without a simulator: $out"
out=$(lrhost eval "$work" --run-dir "$work/bad.run" 2>&1) && fail "eval of a non-checkpoint folder succeeded"
grep -q "not a run folder, checkpoint step folder or pretrained folder" <<<"$out" || fail "unclear error: $out"
echo "closed-loop evaluation, metrics files and resume: ok"
