#!/usr/bin/env bash
# Runs one interop case against LeRobot's Python code (the oracle; see README.md):
#
#   run_interop.sh CASE LRHOST_EXE WORK_DIR
#
# CASE: lerobot_writes_lrhost_reads | lrhost_writes_lerobot_reads | sampler_order | stats_match |
#       quantile_stats.
# WORK_DIR is emptied and holds the datasets and dumps (left in place for inspection).
# Exits 77 (ctest's skip code) when `scripts/setup-interop --python` says the oracle is unavailable,
# 1 on any mismatch (the compare scripts print the differences), 0 when everything matched.
set -euo pipefail
case_name="${1:?usage: run_interop.sh CASE LRHOST_EXE WORK_DIR}"
lrhost="${2:?lrhost executable}"
work="${3:?work dir}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# The oracle's python (its own venv); prints why on stderr and skips when it is not installed.
py="$("$repo/scripts/setup-interop" --python)" || exit 77

rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1 LRHOST_RUN_DIR="$work/runs"
start=$SECONDS
step() { printf '[interop %s +%ds] %s\n' "$case_name" $((SECONDS - start)) "$*"; }
quiet() { # run a command, showing its output only when it fails
  local log="$work/last.log"
  if ! "$@" >"$log" 2>&1; then
    cat "$log"
    echo "command failed: $*" >&2
    return 1
  fi
  tail -n 1 "$log"
}
failures=0

# pair NAME ROOT [--delta-timestamps JSON] [--episodes LIST]: queues one comparison of the same items
# dumped by both readers (LeRobot picks the boundary indices; lrhost dumps exactly those).
pairs=() # NAME ROOT DELTAS EPISODES, four words per queued pair
pair() {
  local name="$1" root="$2"
  shift 2
  local deltas="" episodes=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --delta-timestamps) deltas="$2"; shift 2 ;;
      --episodes) episodes="$2"; shift 2 ;;
      *) echo "pair: bad argument $1" >&2; return 2 ;;
    esac
  done
  pairs+=("$name" "$root" "$deltas" "$episodes")
}
# compare_pairs: the queued pairs; LeRobot's dumps run in one python (importing torch and LeRobot
# costs several seconds of CPU per process), then each pair's lrhost dump and comparison.
compare_pairs() {
  local i name root deltas episodes indices names=() dumps=() log="$work/last.log"
  for ((i = 0; i < ${#pairs[@]}; i += 4)); do
    name="${pairs[i]}" root="${pairs[i + 1]}" deltas="${pairs[i + 2]}" episodes="${pairs[i + 3]}"
    names+=("$name")
    dumps+=("$root" "$work/$name.safetensors")
    [ -n "$deltas" ] && dumps+=(--delta-timestamps "$deltas")
    [ -n "$episodes" ] && dumps+=(--episodes "$episodes")
    dumps+=(";")
  done
  step "${names[*]}: LeRobot dumps"
  if ! "$py" "$here/dump_lerobot_items.py" "${dumps[@]}" >"$log" 2>&1; then
    cat "$log"
    echo "command failed: dump_lerobot_items.py ${dumps[*]}" >&2
    return 1
  fi
  grep '^dump_lerobot_items ' "$log"
  for ((i = 0; i < ${#pairs[@]}; i += 4)); do
    name="${pairs[i]}" root="${pairs[i + 1]}" deltas="${pairs[i + 2]}" episodes="${pairs[i + 3]}"
    indices="$("$py" -c 'import json,sys; from safetensors import safe_open
with safe_open(sys.argv[1], framework="np") as f: print(",".join(map(str, json.loads(f.metadata()["lrhost"])["indices"])))' \
      "$work/$name.safetensors")"
    step "$name: lrhost dump (indices $indices)"
    quiet "$lrhost" "$here/dump_lrhost_items.lua" root="$root" out="$work/$name.json" indices="$indices" \
      deltas="$deltas" episodes="$episodes"
    if ! "$py" "$here/compare_items.py" "$work/$name.safetensors" "$work/$name.json" --label "$name"; then
      failures=$((failures + 1))
    fi
  done
}

case "$case_name" in
  lerobot_writes_lrhost_reads)
    # LeRobot's own writer: AV1 video camera, PNG image camera, 2-D feature, 4 episodes (23, 31, 17,
    # 26 frames at 30 fps; episode 2 has two tasks).
    step "make_lerobot_dataset"
    quiet "$py" "$here/make_lerobot_dataset.py" "$work/lerobot" --episodes 4
    pair plain "$work/lerobot"
    deltas='{"action":[-0.1,-0.0333333,0,0.0333333,0.1,0.2],"observation.state":[-0.0666667,0],'
    deltas+='"observation.extra":[-0.0333333,0,0.0333333],"observation.images.front":[-0.1,0],'
    deltas+='"observation.images.wrist":[-0.0333333,0]}'
    pair deltas "$work/lerobot" --delta-timestamps "$deltas"
    pair subset "$work/lerobot" --episodes 1,3 \
      --delta-timestamps '{"action":[-0.1,0,0.1,0.2],"observation.images.front":[-0.1,0]}'
    compare_pairs
    ;;
  lrhost_writes_lerobot_reads)
    # lrhost's writer (built-in push dataset, 10 fps): two video cameras, then both as PNG images.
    step "lrhost dataset synth (video, --wrist)"
    quiet "$lrhost" dataset synth --out "$work/synth_video" --episodes 4 --wrist
    step "lrhost dataset synth (--images --wrist)"
    quiet "$lrhost" dataset synth --out "$work/synth_images" --episodes 4 --images --wrist
    pair video_plain "$work/synth_video"
    deltas='{"action":[-0.1,0,0.1,0.2],"observation.state":[-0.1,0],"observation.images.top":[-0.1,0],'
    deltas+='"observation.images.wrist":[-0.2,0]}'
    pair video_deltas "$work/synth_video" --delta-timestamps "$deltas"
    pair images_deltas "$work/synth_images" --delta-timestamps "$deltas" --episodes 0,2,3
    compare_pairs
    ;;
  sampler_order)
    # The loader's `index` stream (shuffle=true) vs LeRobot 0.6.1's own EpisodeAwareSampler order
    # (and sampler_order.py's re-implementation of it, which must agree).
    step "lrhost dataset synth"
    quiet "$lrhost" dataset synth --out "$work/synth" --episodes 5
    runs=(
      "s0 seed=0 batch_size=7 drop_first=2 drop_last=3 epochs=2"
      "s12345 seed=12345 batch_size=16 drop_first=1 drop_last=0 epochs=2"
      "nodrop seed=3 batch_size=5 epochs=1"
      "resume seed=12345 batch_size=16 drop_first=1 epochs=2 start_epoch=1 start_index=32"
      "subset seed=99 batch_size=4 drop_first=2 drop_last=2 episodes=1,3,4 epochs=2"
    )
    for run in "${runs[@]}"; do
      read -r name args <<<"$run"
      step "$name: lrhost loader ($args)"
      # shellcheck disable=SC2086
      quiet "$lrhost" "$here/sampler_order.lua" root="$work/synth" out="$work/order_$name.json" $args
    done
    step "compare with sampler_order.py"
    if ! "$py" - "$here" "$work/synth" "$work" "${runs[@]}" <<'EOF'; then failures=$((failures + 1)); fi
import json, sys
sys.path.insert(0, sys.argv[1])
import _lerobot_compat  # noqa: F401  (offline env, before lerobot)
from sampler_order import lerobot_sampler_order, ranges_from_dataset, sampler_order
root, work, runs = sys.argv[2], sys.argv[3], sys.argv[4:]
ranges = ranges_from_dataset(root)
bad = 0
for run in runs:
    name, *args = run.split()
    a = dict(x.split("=", 1) for x in args)
    got = json.load(open(f"{work}/order_{name}.json"))
    use = [int(e) for e in a["episodes"].split(",")] if "episodes" in a else None
    first_epoch, start = int(a.get("start_epoch", 0)), int(a.get("start_index", 0))
    for k, order in enumerate(got["epochs"]):
        epoch, s = first_epoch + k, (start if k == 0 else 0)
        params = (int(a["seed"]), epoch, ranges, int(a.get("drop_first", 0)), int(a.get("drop_last", 0)), use, s)
        n, want = lerobot_sampler_order(*params)
        tag = f"[{name}] epoch {epoch} start {s}"
        if sampler_order(*params) != (n, want):
            print(f"{tag}: sampler_order.py's re-implementation differs from LeRobot's sampler"); bad += 1
        if n != got["num_samples"]:
            print(f"{tag}: num_samples LeRobot {n} lrhost {got['num_samples']}"); bad += 1
        if want != order:
            diff = next((i for i, (x, y) in enumerate(zip(want, order)) if x != y), min(len(want), len(order)))
            print(f"{tag}: ORDER MISMATCH ({len(want)} vs {len(order)} samples), first difference at position "
                  f"{diff}: LeRobot {want[diff:diff + 8]} lrhost {order[diff:diff + 8]}"); bad += 1
        else:
            print(f"{tag}: OK {len(order)} samples, batch_size {got['batch_size']}, "
                  f"{got['batches_per_epoch']} batches/epoch, first {order[:6]}")
sys.exit(1 if bad else 0)
EOF
    ;;
  stats_match)
    # ds:stats() (lrhost's stats.json reader) vs LeRobot's load_stats, for a LeRobot-written dataset
    # (stats computed by LeRobot's writer) and for an lrhost-written one (stats computed by lrhost).
    step "make_lerobot_dataset"
    quiet "$py" "$here/make_lerobot_dataset.py" "$work/lerobot" --episodes 3
    step "lrhost dataset synth"
    quiet "$lrhost" dataset synth --out "$work/synth" --episodes 4 --wrist
    compares=()
    for name in lerobot synth; do
      step "$name: lrhost ds:stats()"
      quiet "$lrhost" "$here/dump_lrhost_items.lua" root="$work/$name" out="$work/stats_$name.json" indices=0 stats=true
      compares+=(--stats "$work/$name" "$work/stats_$name.json" --label "$name" ";")
    done
    step "compare with LeRobot's load_stats (lerobot, synth)"
    # One python for both (importing LeRobot costs several seconds); it exits with the failing count.
    rc=0
    "$py" "$here/compare_items.py" "${compares[@]}" || rc=$?
    failures=$((failures + rc))
    ;;
  quantile_stats)
    # `lrhost dataset stats` on a LeRobot-written dataset whose quantiles were removed, against LeRobot
    # 0.6.1's compute_quantile_stats_for_dataset (augment_dataset_quantile_stats.py) on the original,
    # then QUANTILES / QUANTILE10 normalization: lrhost's normalizer vs LeRobot's NormalizerProcessorStep.
    step "make_lerobot_dataset"
    quiet "$py" "$here/make_lerobot_dataset.py" "$work/lerobot" --episodes 3
    cp -r "$work/lerobot" "$work/augmented"
    "$py" - "$work/augmented/meta/stats.json" <<'EOF'
import json, sys
stats = json.load(open(sys.argv[1]))
for entry in stats.values():
    for q in ("q01", "q10", "q50", "q90", "q99"):
        entry.pop(q, None)
json.dump(stats, open(sys.argv[1], "w"), indent=4)
EOF
    step "lrhost dataset stats"
    quiet "$lrhost" dataset stats "$work/augmented"
    for mode in QUANTILES QUANTILE10; do
      step "lrhost normalizer ($mode)"
      quiet "$lrhost" "$here/quantile_norm.lua" root="$work/augmented" out="$work/norm_$mode.json" mode="$mode"
    done
    step "compare with LeRobot (compute_quantile_stats_for_dataset, NormalizerProcessorStep)"
    rc=0
    "$py" "$here/quantile_stats_check.py" "$work/lerobot" "$work/augmented" "$work/norm_QUANTILES.json" \
      "$work/norm_QUANTILE10.json" || rc=$?
    failures=$((failures + rc))
    ;;
  *)
    echo "unknown case $case_name" >&2
    exit 2
    ;;
esac

step "done: $failures failing comparison(s)"
[ "$failures" -eq 0 ]
