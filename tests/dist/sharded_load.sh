#!/usr/bin/env bash
# Pretrained weights loaded on N ranks without N whole copies (LeRobot #4009; sharded_load.lua): a pi05
# of ~0.68 GB (fp32) is saved once, then loaded and FSDP-sharded on 4 ranks file-backed (each rank maps
# the checkpoint and copies out only its rows) and on 2 ranks by copying (each rank builds the whole
# model, then broadcasts it). Every rank checks that its shards hold the file's values exactly; the
# test bounds the growth of each rank's peak resident memory from before the load to after
# acc:prepare: file-backed at most 0.9 x the model (its shard and the file rows it read, a quarter each,
# plus a few blocks in flight) and under half of the copying load's, which holds the model about twice.
# Both runs then save one sharded checkpoint, and each rank's log states save_host_peak_bytes, the
# host tensor bytes its part of the save allocated at its peak: rank 0, which writes
# model.safetensors, holds the gathered model (within 1.1 x of its bytes, and at least them); every
# other rank only passes each gathered unit on (at most what the largest unit's gather holds: its
# shard, the padded full tensor and Gloo's flat copy of it, 1.1 x; and under 0.3 x the model: before,
# every rank held the whole model).
# Usage: sharded_load.sh LRHOST WORK_DIR
set -euo pipefail
exe=$1 work=$2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$work"
mkdir -p "$work"
run() { # run LOG ARGS...: one lrhost call, killed after 300 s
  local log=$1
  shift
  if ! timeout 300 "$exe" "$@" > "$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "FAIL: lrhost $*" >&2
    exit 1
  fi
}
run "$work/save.log" --device cpu "$here/sharded_load.lua" mode=save dir="$work/pi05" \
  geometry="$here/sharded_load_geometry.json"
model_bytes=$(sed -n 's/^saved pi05 with \([0-9]*\) parameter bytes.*/\1/p' "$work/save.log")
run "$work/file_backed.log" --nproc 4 --device cpu --run-dir "$work/run_fb" "$here/sharded_load.lua" mode=load \
  dir="$work/pi05" file_backed=true save_to="$work/ckpt_fb"
run "$work/copy.log" --nproc 2 --device cpu --run-dir "$work/run_copy" "$here/sharded_load.lua" mode=load \
  dir="$work/pi05" file_backed=false save_to="$work/ckpt_copy"
python3 - "$model_bytes" "$work" <<'PY'
import os, re, sys
model, work = int(sys.argv[1]), sys.argv[2]
for run, log, ranks in (("run_fb", "file_backed.log", 4), ("run_copy", "copy.log", 2)):
    unit = int(re.search(r"largest gathered unit (\d+) bytes", open(os.path.join(work, log)).read()).group(1))
    peaks = []
    for r in range(ranks):
        found = re.findall(r"save_host_peak_bytes=(\d+)", open(os.path.join(work, run, "logs", f"rank{r}.log")).read())
        if len(found) != 1:
            sys.exit(f"FAIL: {run} rank {r} logged save_host_peak_bytes {len(found)} times, expected once")
        peaks.append(int(found[0]))
    print(f"{run}: save_host_peak_bytes per rank {', '.join(f'{p / 2**20:.1f}' for p in peaks)} MiB "
          f"(model {model / 2**20:.1f} MiB, largest unit {unit / 2**20:.1f} MiB)")
    if not model <= peaks[0] <= 1.1 * model:
        sys.exit(f"FAIL: {run}: rank 0 (the writer) peaked at {peaks[0]} bytes, not the model's {model} (+10%)")
    for r, peak in enumerate(peaks[1:], start=1):
        if not (peak <= 1.1 * unit and peak < 0.3 * model):
            sys.exit(f"FAIL: {run}: rank {r} peaked at {peak} bytes, more than one unit ({unit}) or 0.3 x the model")
print("ok: only the writing rank held the gathered model")
PY
python3 - "$model_bytes" "$work/file_backed.log" "$work/copy.log" <<'PY'
import re, sys
model = int(sys.argv[1])
def growths(path, ranks):
    found = [int(m) for m in re.findall(r"sharded load ok: rank \d+ of \d+, .*peak memory grew (\d+) bytes", open(path).read())]
    if len(found) != ranks:
        sys.exit(f"FAIL: {path}: {len(found)} of {ranks} ranks reported")
    return found
file_backed, copy = growths(sys.argv[2], 4), growths(sys.argv[3], 2)
worst = max(file_backed)
print(f"model {model / 2**20:.0f} MiB; peak growth per rank: file-backed on 4 ranks "
      f"{', '.join(f'{g / 2**20:.0f}' for g in file_backed)} MiB, copying on 2 ranks "
      f"{', '.join(f'{g / 2**20:.0f}' for g in copy)} MiB")
if not worst <= 0.9 * model:
    sys.exit(f"FAIL: a file-backed rank grew by {worst} bytes, more than 0.9 x the model ({model})")
if not min(copy) >= 1.5 * model:
    sys.exit(f"FAIL: the copying load grew by only {min(copy)} bytes: the bound above would not tell the two apart")
if not worst < 0.5 * min(copy):
    sys.exit(f"FAIL: file-backed {worst} bytes is not under half of copying {min(copy)}")
print("ok: no rank held the whole model to load it")
PY
