#!/usr/bin/env bash
# Regenerates the seed corpus of the reader fuzz targets (tests/fuzz/corpus/, tests/fuzz/meta/) and
# records where each seed comes from. Seeds are kept small: a fuzzer mutates them, so a 3-episode
# dataset exercises the same code as a large one at a fraction of the cost per execution.
#   tests/fuzz/make_corpus.sh    (needs a built lrhost: $LRHOST_BUILD_DIR/lrhost, default build/)
# Sources:
#   dataset_info, stats_json, episodes_parquet, meta/: `lrhost dataset synth` with 3 episodes of at
#     most 10 frames and 16x16 images (meta/info.json, stats.json, the episode table, tasks.parquet);
#   safetensors: the Python-written fixture and a 1-byte corrupt rng_state file from tests/fixtures;
#   metrics_jsonl: the run_a and bad_middle fixtures from tests/fixtures/metrics;
#   tokenizer, processors: written by hand (not regenerated here): byte_level.json and
#     byte_fallback.json are tiny BPE files of each family with <pad> and <s> added tokens;
#     processors/act.json is LeRobot's default preprocessor for a policy with observation.state [3]
#     (MEAN_STD) and action [2] (MIN_MAX), whose normalizer state file fuzz_processors.cpp writes;
#   policy_config: LeRobot's own default config.json of each policy (PI05Config(), PI0Config(),
#     SmolVLAConfig(), ACTConfig(), DiffusionConfig()._save_pretrained, LeRobot 0.6.1), whose
#     input_features and output_features are empty ({}): hand-kept, not regenerated here;
#   checksum_manifest: written below from the fixed files of fuzz_checksum_manifest.cpp (a.bin,
#     sub/b.bin and its nested manifest, whose CRC32Cs the seeds carry): a valid sharded manifest, one
#     with the default chunk size, damaged, truncated, newer-format and non-string-algorithm ones, and
#     hostile ones (naming itself, ../ and absolute paths).
# Check that every seed reaches its reader's successful path (not only an error):
#   LRHOST_FUZZ_VERBOSE=1 $LRHOST_FUZZ_DIR/fuzz_<target> tests/fuzz/corpus/<target>/*
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
lrhost="${LRHOST_BUILD_DIR:-$root/build}/lrhost"
corpus="$root/tests/fuzz/corpus"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$lrhost" dataset synth --out "$work/synth" --episodes 3 --max-length 10 --image-size 16 >/dev/null  # SVT-AV1 refuses 16x16 on stderr; lrhost falls back to x264
meta="$work/synth/meta"
cp "$meta/info.json" "$corpus/dataset_info/synth_v30.json"
cp "$meta/stats.json" "$corpus/stats_json/synth.json"
cp "$meta/episodes/chunk-000/file-000.parquet" "$corpus/episodes_parquet/synth.parquet"
cp "$meta/info.json" "$meta/tasks.parquet" "$root/tests/fuzz/meta/"

cp "$root/tests/fixtures/safetensors/python_written.safetensors" "$corpus/safetensors/"
cp "$root/tests/fixtures/checkpoints/corrupt_config/checkpoints/000001/training_state/rng_state.safetensors" \
  "$corpus/safetensors/"
cp "$root/tests/fixtures/metrics/run_a/metrics.jsonl" "$corpus/metrics_jsonl/run_a.jsonl"
cp "$root/tests/fixtures/metrics/bad_middle/metrics.jsonl" "$corpus/metrics_jsonl/bad_middle.jsonl"
python3 - "$corpus/checksum_manifest" <<'PY'
import json, os, sys
# CRC32C (Castagnoli, reflected 0x82F63B78), as host/util/crc32c.hpp computes it.
table = []
for n in range(256):
    c = n
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    table.append(c)
def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
assert crc32c(b"123456789") == 0xE3069283
def entry(data, chunk):
    return {"bytes": len(data), "crc32c": ["%08x" % crc32c(data[i:i + chunk]) for i in range(0, len(data), chunk)]}
def manifest(files, manifests=None, chunk=64, fmt=1):
    m = {"format": fmt, "algorithm": "crc32c", "chunk_bytes": chunk, "files": files}
    if manifests is not None: m["manifests"] = manifests
    return json.dumps(m, indent=1)
# The fixed files of tests/fuzz/fuzz_checksum_manifest.cpp.
a = bytes((i * 37 + 11) & 0xFF for i in range(200))
b = b"lrhost fuzz shard 0\n" * 4
nested = manifest({"b.bin": entry(b, 32)}, chunk=32).encode()
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
def seed(name, text):
    open(os.path.join(out, name), "w").write(text)
nested_name = "sub/rank_0.checksums.json"
# As rank 0 writes it for a sharded checkpoint: the nested manifest is a listed file and named.
seed("valid_nested.json", manifest({"a.bin": entry(a, 64), nested_name: entry(nested, 64)}, [nested_name]))
seed("flat_default_chunk.json", manifest({"a.bin": entry(a, 8 << 20)}, chunk=8 << 20))
damaged = entry(a, 64)
damaged["crc32c"][1] = "%08x" % (int(damaged["crc32c"][1], 16) ^ 0x10)
resized = entry(b, 64)
resized["bytes"] = 81
seed("damaged.json", manifest({"a.bin": damaged, "sub/b.bin": resized, "gone.bin": entry(b"", 64)},
                              ["sub/missing.checksums.json"]))
seed("truncated.json", manifest({"a.bin": entry(a, 64)}, [nested_name])[:90])
seed("newer_format.json", manifest({"a.bin": entry(a, 64)}, fmt=2))
# "algorithm" not a string (a fuzzer finding: nlohmann's type_error escaped parse_checksum_manifest).
seed("algorithm_not_string.json", manifest({"a.bin": entry(a, 64)}).replace('"crc32c",', '["crc32c"],', 1))
# Hostile: a manifest naming itself (also through aliases), and paths outside the folder.
seed("self_loop.json", manifest({"a.bin": entry(a, 64)}, ["checksums.json", "sub/rank_0.checksums.json"]))
seed("escape.json", manifest({"../outside.bin": entry(a, 64), "/etc/hostname": entry(b"", 64)},
                             ["../ckpt/sub/rank_0.checksums.json"]))
# Twelve spellings of itself: verified 12^5 times over before names had one spelling (a hang).
seed("self_aliases.json", manifest({}, ["checksums.json"] + ["." + "/" * k + "checksums.json" for k in range(1, 12)]))
PY
echo "seeds written to $corpus (tokenizer/, processors/ and policy_config/ are hand-kept and unchanged)"
