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
#     input_features and output_features are empty ({}): hand-kept, not regenerated here.
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
echo "seeds written to $corpus (tokenizer/, processors/ and policy_config/ are hand-kept and unchanged)"
