#!/usr/bin/env bash
# Builds the reader fuzz targets (libFuzzer + ASan + UBSan) and runs each for a fixed number of
# executions; `scripts/bench fuzz` calls it. Building the whole project with sanitizers would take
# hours on a small machine, so only the reader sources each target exercises are compiled
# instrumented; everything else links uninstrumented from the normal build's liblrhost_host.a (which
# must be built from this checkout: scripts/setup). Our instrumented objects come first and win over
# the library's copies of the same functions (--allow-multiple-definition).
#   tests/fuzz/run.sh                    build, then run every target
#   tests/fuzz/run.sh safetensors ...    only these targets
#   LRHOST_FUZZ_RUNS (default 100000), LRHOST_FUZZ_DIR (default $LRHOST_BUILD_DIR/fuzz)
#   LRHOST_BUILD_DIR may be a snapshot of a build folder that is being rebuilt elsewhere: a copy of
#   liblrhost_host.a, compile_commands.json, build.ninja, CMakeCache.txt and fmt_shim/ (cp -a);
#   include folders inside the original build folder are taken from the snapshot instead.
# Reproduce a crash: $LRHOST_FUZZ_DIR/fuzz_<target> <crash file>; each run's findings and log are
# written to $LRHOST_FUZZ_DIR/findings/<target>/<run id>/ and the corpus grows in
# $LRHOST_FUZZ_DIR/corpus/<target>/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${LRHOST_BUILD_DIR:-$root/build}"
out="${LRHOST_FUZZ_DIR:-$build/fuzz}"
runs="${LRHOST_FUZZ_RUNS:-100000}"
export LRHOST_FUZZ_META="$root/tests/fuzz/meta"  # fixed files of the episodes_parquet target
cxx="${LRHOST_FUZZ_CXX:-clang++-16}"
# libFuzzer ships in Debian's libclang-rt-16-dev (only recommended by clang-16).
if ! "$cxx" -print-file-name=libclang_rt.fuzzer-x86_64.a | grep -q /; then
  echo "run.sh: $cxx has no libFuzzer runtime; install it with: sudo apt-get install libclang-rt-16-dev" >&2
  exit 2
fi

declare -A sources=(
  [safetensors]="host/io/safetensors.cpp"
  [dataset_info]="host/data/dataset_info.cpp"
  [stats_json]="host/data/stats/feature_stats.cpp"
  [episodes_parquet]="host/data/dataset_meta.cpp host/data/dataset_info.cpp host/data/parquet/parquet_reader.cpp host/data/parquet/arrow_tensor.cpp"
  [tokenizer]="host/text/added_vocabulary.cpp host/text/bpe_model.cpp host/text/byte_fallback.cpp host/text/byte_fallback_files.cpp host/text/byte_level.cpp host/text/pre_tokenizer.cpp host/text/tokenizer.cpp host/text/tokenizer_files.cpp host/text/unicode_regex.cpp host/text/utf8.cpp"
  [processors]="host/policy/processors.cpp"
  [metrics_jsonl]="host/metrics/metrics_file.cpp host/metrics/jsonl_sink.cpp"
  [policy_config]="host/ckpt/pretrained_dir.cpp host/policy/policy_features.cpp host/policy/pretrained_overrides.cpp"
  [checksum_manifest]="host/io/checksum_manifest.cpp host/io/verified_reads.cpp host/io/written_checksums.cpp"
)
all=(safetensors dataset_info stats_json episodes_parquet tokenizer processors metrics_jsonl policy_config checksum_manifest)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

for file in liblrhost_host.a compile_commands.json build.ninja CMakeCache.txt; do
  [ -f "$build/$file" ] || { echo "fuzz: $build/$file missing; build first (scripts/setup)" >&2; exit 1; }
done
mkdir -p "$out"

# Compile flags of the normal build (defines, include folders, warnings) with the source folder
# pointed at this checkout and the precompiled header, optimization and output arguments left out.
python3 - "$build" "$root" "$out/flags" <<'PY'
import json, shlex, sys
build, root, dest = sys.argv[1:]
cache = [line.strip() for line in open(f"{build}/CMakeCache.txt")]
source_dir = next(line.split("=", 1)[1] for line in cache if line.startswith("CMAKE_HOME_DIRECTORY:"))
binary_dir = next(line.split("=", 1)[1] for line in cache if line.startswith("CMAKE_CACHEFILE_DIR:"))
entry = next(e for e in json.load(open(f"{build}/compile_commands.json")) if "lrhost_host.dir" in e["command"])
args, keep, skip = shlex.split(entry["command"])[1:], [], 0
for i, arg in enumerate(args):
    if skip: skip -= 1; continue
    if arg in ("-o", "-c"): skip = 1; continue
    if arg == "-Xclang":  # -Xclang -include-pch -Xclang FILE and friends: all PCH plumbing
        skip = 1 if args[i + 1] == "-fno-pch-timestamp" else 3; continue
    if arg.startswith(("-O", "-g", "-fmacro-prefix-map")) or arg in ("-DNDEBUG", "-Winvalid-pch"): continue
    if arg == "-fpch-instantiate-templates": continue
    if arg == f"-I{source_dir}": arg = f"-I{root}"
    elif arg.startswith(f"-I{binary_dir}/"): arg = f"-I{build}" + arg[len(f"-I{binary_dir}"):]
    keep.append(arg)
open(dest, "w").write(" ".join(shlex.quote(a) for a in keep) + "\n")
PY
# Link libraries of the unit-test binary (it links what liblrhost_host.a needs and no allocator).
awk '/^build tests\/lrhost_unit_tests:/ {found = 1} found && /LINK_LIBRARIES =/ {sub(/^ *LINK_LIBRARIES = /, ""); print; exit}' \
  "$build/build.ninja" | sed 's| liblrhost_host.a | |' >"$out/libs"

# A ninja file: header dependencies tracked, one job (the machine is shared), objects reused.
sanitize="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
{
  echo "rule cxx"
  echo "  command = $cxx $(cat "$out/flags") -O1 -g $sanitize -MD -MF \$out.d -c \$in -o \$out"
  echo "  depfile = \$out.d"
  echo "  deps = gcc"
  echo "rule link"
  echo "  command = $cxx $sanitize \$in -Wl,--allow-multiple-definition $build/liblrhost_host.a $(cat "$out/libs") -o \$out"
  for target in "${targets[@]}"; do
    [ -n "${sources[$target]:-}" ] || { echo "fuzz: unknown target '$target' (${all[*]})" >&2; exit 1; }
    objects="obj/fuzz_$target.o"
    echo "build obj/fuzz_$target.o: cxx $root/tests/fuzz/fuzz_$target.cpp"
    for source in ${sources[$target]}; do
      object="obj/$target/${source//\//_}.o"
      objects+=" $object"
      echo "build $object: cxx $root/$source"
    done
    echo "build fuzz_$target: link $objects"
  done
} >"$out/build.ninja"
ninja -C "$out" -j1 >&2

# Each target: seed corpus copied into a working corpus (the fuzzer adds to it), a per-input time
# limit that turns a hang into a finding, and a memory cap.
printf '%-18s %10s %8s %8s %9s\n' target executions crashes seconds "exec/s"
status=0
for target in "${targets[@]}"; do
  # Findings and the log go to a folder of this run, so an earlier run's crash is never counted again
  # and two runs sharing $LRHOST_FUZZ_DIR do not overwrite each other's log.
  run_id="$(date +%Y%m%dT%H%M%S)-$$"
  corpus="$out/corpus/$target" findings="$out/findings/$target/$run_id"
  mkdir -p "$corpus" "$findings"
  cp -n "$root/tests/fuzz/corpus/$target/"* "$corpus/" 2>/dev/null || true
  log="$findings/fuzz_$target.log"
  start=$(date +%s.%N)
  set +e
  (cd "$out" && ./"fuzz_$target" -runs="$runs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
    -artifact_prefix="$findings/" -print_final_stats=1 "$corpus" >"$log" 2>&1)
  rc=$?
  set -e
  seconds=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { print a - b }')
  executions=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  crashes=$(find "$findings" -type f ! -name "fuzz_$target.log" | wc -l)
  [ "$rc" = 0 ] && [ "$crashes" = 0 ] || status=1
  printf '%-18s %10s %8s %8.0f %9.0f\n' "$target" "${executions:-?}" "$crashes" "$seconds" \
    "$(awk -v n="${executions:-0}" -v s="$seconds" 'BEGIN { print n / s }')"
  [ "$rc" = 0 ] || echo "  fuzz_$target exited $rc; see $log" >&2
done
exit "$status"
