#!/usr/bin/env bash
# Pretrained weights loaded on N ranks without N whole copies (LeRobot #4009; sharded_load.lua): a pi05
# of ~0.68 GB (fp32) is saved once, then loaded and FSDP-sharded on 4 ranks file-backed (each rank maps
# the checkpoint and copies out only its rows) and on 2 ranks by copying (each rank builds the whole
# model, then broadcasts it). Every rank checks that its shards hold the file's values exactly; the
# test bounds the growth of each rank's peak resident memory from before the load to after
# acc:prepare: file-backed at most 0.9 x the model (its shard and the file rows it read, a quarter each,
# plus a few blocks in flight) and under half of the copying load's, which holds the model about twice.
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
  dir="$work/pi05" file_backed=true
run "$work/copy.log" --nproc 2 --device cpu --run-dir "$work/run_copy" "$here/sharded_load.lua" mode=load \
  dir="$work/pi05" file_backed=false
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
