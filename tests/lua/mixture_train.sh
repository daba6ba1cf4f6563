#!/usr/bin/env bash
# Dataset mixtures (dataset.mixture) through the shipped recipes on CPU ranks:
#  - every shipped recipe (ACT DDP and FSDP, Diffusion, SmolVLA, pi0, pi05; tiny) trains 2 steps on a
#    weighted two-dataset mixture given as a shared @file; metrics.jsonl has samples_seen/<name>, summing
#    to the samples trained; loss/<name> averages (by samples_seen's counts) to pi05's loss;
#  - ACT on 2 DDP ranks: resumed at step 2, samples_seen at step 4 equals the uninterrupted run's (the
#    stream is a function of the seed), and the weights' share shows (3:1 over 16 steps);
#  - SmolVLA and pi05 on 2 FSDP ranks on three datasets with 1 or 2 cameras and 10 or 20 fps
#    (dataset.mixed_fps): they train, and the log names the camera a dataset lacks; and on three with
#    action widths 6 and 7, three cameras in all, 10 and 20 fps and dataset.stats=per_dataset: the
#    checkpoint holds each dataset's processors;
#  - ACT with per-dataset stats: resumed (the stats kept), `lrhost eval --dataset-name` (without it
#    an error saying so, an unknown name listing the datasets);
#  - `lrhost dataset info @mix.json` and `lrhost show` describe the mixture (shares, passes, cameras);
#  - the errors a user meets name the dataset and the key.
# Usage: mixture_train.sh LRHOST WORK_DIR RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 recipes=$3
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
# shellcheck source=lrhost_calls.sh
source "$(dirname "${BASH_SOURCE[0]}")/lrhost_calls.sh"
# The last logged value of a metric in a run's metrics.jsonl.
metric() { grep -o "\"$2\":[0-9.e+-]*" "$1/metrics.jsonl" | tail -1 | cut -d: -f2 | awk '{ printf "%d", $1 }'; }

cat > "$work/make.lua" <<LUA
local lr = require "lrhost"
lr.dataset.synth { out = "$work/a", episodes = 6, max_length = 16, seed = 1 }
lr.dataset.synth { out = "$work/b", episodes = 4, max_length = 16, seed = 2 }
lr.dataset.synth { out = "$work/wrist", episodes = 4, max_length = 16, seed = 3, wrist = true, vcodec = "libx264" }
lr.dataset.synth { out = "$work/fast", episodes = 4, max_length = 16, seed = 4, fps = 20 }
-- Robots with action widths 6 and 7, one or two cameras, 10 or 20 fps.
lr.dataset.synth { out = "$work/six", episodes = 4, max_length = 16, seed = 5, extra_action_dims = 4 }
lr.dataset.synth { out = "$work/seven", episodes = 4, max_length = 16, seed = 6, extra_action_dims = 5, wrist = true }
lr.dataset.synth { out = "$work/six_fast", episodes = 4, max_length = 16, seed = 7, extra_action_dims = 4, fps = 20,
                   wrist = true }
LUA
run "$work/make.log" "$work/make.lua"
echo "[{\"root\": \"$work/a\", \"weight\": 1}, {\"root\": \"$work/b\", \"weight\": 3, \"name\": \"bee\"}]" > "$work/mix.json"
mix="dataset.mixture=@$work/mix.json"
tiny=(batch_size=2 log_freq=1 eval_batches=1 eval_episodes=2 num_workers=1)
act=(policy.dim_model=64 policy.dim_feedforward=128 policy.n_heads=2 policy.n_encoder_layers=1
  policy.n_vae_encoder_layers=1)
declare -A small
small=([act_ddp]="${act[*]}" [act_fsdp]="${act[*]}" [diffusion_ddp]="policy.down_dims=[32,64] policy.diffusion_step_embed_dim=32")

for recipe in act_ddp act_fsdp diffusion_ddp smolvla pi0 pi05; do
  # shellcheck disable=SC2206  # the small network's overrides, split as words
  sizes=(${small[$recipe]:-})
  run "$work/$recipe.log" --device cpu "$recipes/$recipe.lua" output_dir="$work/$recipe" steps=2 save_freq=2 \
    "${tiny[@]}" "${sizes[@]}" "$mix"
  a=$(metric "$work/$recipe" "samples_seen/a")
  b=$(metric "$work/$recipe" "samples_seen/bee")
  [ $((a + b)) = 4 ] || fail "$recipe: samples_seen a=$a bee=$b, expected 4 in all"
  grep -q "dataset mixture (weighting given, stats pooled): 2 datasets" "$work/$recipe.log" || fail "$recipe: no mixture line"
done

# loss/<name> is the mean loss of that dataset's samples: pi05's loss is a plain mean over equal-sized
# samples, so each step's loss must be the sample-weighted mean of its datasets' (counts from
# samples_seen's steps). float32 sums of 4 x 10 x 8 elements: relative error well under 1e-5.
run "$work/pi05-loss.log" --device cpu "$recipes/pi05.lua" output_dir="$work/pi05-loss" steps=6 save_freq=6 \
  batch_size=4 log_freq=1 eval_episodes=0 num_workers=1 "$mix"
worst=$(jq -s '
  [ .[] | select(has("samples_seen/a")) ] as $r
  | [ range(0; $r | length) as $i
      | $r[$i] as $x
      | (if $i == 0 then {"samples_seen/a": 0, "samples_seen/bee": 0} else $r[$i - 1] end) as $p
      | [ ("a", "bee") as $n | { n: ($x["samples_seen/" + $n] - $p["samples_seen/" + $n]), l: ($x["loss/" + $n] // 0) } ]
      | ((map(.n * .l) | add) / (map(.n) | add) - $x.loss) / $x.loss | fabs ] | max' "$work/pi05-loss/metrics.jsonl")
mixed=$(jq -s '[ .[] | select(has("loss/a") and has("loss/bee")) ] | length' "$work/pi05-loss/metrics.jsonl")
[ "$mixed" -ge 1 ] || fail "pi05: no step drew from both datasets"
jq -n --argjson w "$worst" '$w < 1e-5' | grep -q true || fail "pi05: loss/<name> do not average to the loss (worst relative $worst)"

# 2 DDP ranks, 16 steps of 4 samples: uninterrupted, and resumed from step 8.
ddp=(--device cpu --nproc 2 "$recipes/act_ddp.lua" batch_size=2 log_freq=4 eval_episodes=0 num_workers=1 "${act[@]}" "$mix")
run "$work/whole.log" "${ddp[@]}" output_dir="$work/whole" steps=16 save_freq=16
run "$work/part.log" "${ddp[@]}" output_dir="$work/part" steps=8 save_freq=8
run "$work/rest.log" "${ddp[@]}" output_dir="$work/part" steps=16 save_freq=16
for name in a bee; do
  whole=$(metric "$work/whole" "samples_seen/$name")
  resumed=$(metric "$work/part" "samples_seen/$name")
  [ "$whole" = "$resumed" ] || fail "samples_seen/$name: $resumed after a resume, $whole uninterrupted"
done
a=$(metric "$work/whole" "samples_seen/a")
b=$(metric "$work/whole" "samples_seen/bee")
[ $((a + b)) = 64 ] || fail "2 ranks x 16 steps x 2: samples_seen a=$a bee=$b"
[ "$b" -gt "$a" ] || fail "weight 3 for bee against 1 for a, got a=$a bee=$b"

# Different cameras and fps under FSDP on 2 ranks.
hetero="dataset.mixture=[{\"root\": \"$work/a\"}, {\"root\": \"$work/wrist\", \"weight\": 2}, {\"root\": \"$work/fast\"}]"
for recipe in smolvla pi05; do
  run "$work/$recipe-hetero.log" --device cpu --nproc 2 "$recipes/$recipe.lua" output_dir="$work/$recipe-hetero" \
    steps=2 save_freq=2 "${tiny[@]}" parallelism.dp_shard=-1 dataset.mixed_fps=true "$hetero"
  grep -q "no observation.images.wrist" "$work/$recipe-hetero.log" || fail "$recipe: the missing camera is not named"
  [ -f "$work/$recipe-hetero/checkpoints/000002/pretrained_model/config.json" ] || fail "$recipe: no checkpoint"
done

# Action widths 6 and 7, three cameras in all (seven's wrist, six_fast's wrist renamed side), 10 and
# 20 fps, each sample normalized with its own dataset's stats, under FSDP on 2 ranks.
wide="dataset.mixture=[{\"root\": \"$work/six\"}, {\"root\": \"$work/seven\"},
  {\"root\": \"$work/six_fast\", \"rename_map\": {\"observation.images.wrist\": \"observation.images.side\"}}]"
for recipe in smolvla pi05; do
  out="$work/$recipe-wide"
  run "$out.log" --device cpu --nproc 2 "$recipes/$recipe.lua" output_dir="$out" steps=2 save_freq=2 "${tiny[@]}" \
    parallelism.dp_shard=-1 dataset.mixed_fps=true dataset.stats=per_dataset "$wide"
  grep -q "stats per_dataset): 3 datasets" "$out.log" || fail "$recipe: no per-dataset mixture line"
  grep -q "no observation.images.side" "$out.log" || fail "$recipe: the renamed camera others lack is not named"
  saved="$out/checkpoints/000002/pretrained_model"
  jq -e '.datasets == ["six", "seven", "six_fast"]' "$saved/per_dataset_stats.json" > /dev/null ||
    fail "$recipe: per_dataset_stats.json: $(cat "$saved/per_dataset_stats.json")"
  for name in six seven six_fast; do
    [ -f "$saved/policy_preprocessor_$name.json" ] && [ -f "$saved/policy_postprocessor_$name.json" ] ||
      fail "$recipe: no processors of $name"
  done
  jq -e '.output_features.action.shape == [7]' "$saved/config.json" > /dev/null || fail "$recipe: action not 7 wide"
done

# Per-dataset stats with the push task's own widths: resumed, and evaluated with one dataset's stats.
per=(--device cpu "$recipes/act_ddp.lua" batch_size=2 log_freq=1 eval_episodes=2 eval_batches=1 num_workers=1
  "${act[@]}" dataset.stats=per_dataset "$mix")
run "$work/per.log" "${per[@]}" output_dir="$work/per" steps=2 save_freq=2
run "$work/per-rest.log" "${per[@]}" output_dir="$work/per" steps=4 save_freq=2
cmp "$work/per/checkpoints/000002/pretrained_model/policy_preprocessor_bee_step_3_normalizer_processor.safetensors" \
  "$work/per/checkpoints/000004/pretrained_model/policy_preprocessor_bee_step_3_normalizer_processor.safetensors" ||
  fail "per_dataset: bee's stats changed across the resume"
refused "$work/per-eval-none.log" "lrhost eval --dataset-name NAME" eval "$work/per" --episodes 1 --videos 0 --max-steps 3
run "$work/per-eval.log" eval "$work/per" --episodes 1 --videos 0 --max-steps 3 --dataset-name bee
refused "$work/per-eval-bad.log" "its datasets: 'a', 'bee'" eval "$work/per" --episodes 1 --videos 0 --max-steps 3 \
  --dataset-name nobody

# What a user checks first: `dataset info` of the mixture file, `show` with the run's passes.
run "$work/info.log" dataset info "@$work/mix.json"
grep -q "bee .* 64 frames .* share  75.0%" "$work/info.log" || fail "dataset info: $(cat "$work/info.log")"
run "$work/show.log" show "$recipes/smolvla.lua" steps=100 batch_size=4 dataset.mixed_fps=true "$hetero"
grep -q "wrist .* share  50.0%  3.92 passes" "$work/show.log" || fail "show: $(tail -5 "$work/show.log")"
grep -q "no observation.images.wrist" "$work/show.log" || fail "show does not name the missing camera"

# Errors.
refused "$work/e1.log" "has no camera 'observation.images.wrist', and the act policy has no empty cameras" \
  --device cpu "$recipes/act_ddp.lua" output_dir="$work/e1" steps=1 "${act[@]}" \
  "dataset.mixture=[{\"root\": \"$work/a\"}, {\"root\": \"$work/wrist\"}]"
refused "$work/e2.log" "records at 20 fps" --device cpu "$recipes/smolvla.lua" output_dir="$work/e2" steps=1 \
  "dataset.mixture=[{\"root\": \"$work/a\"}, {\"root\": \"$work/fast\"}]"
refused "$work/e3.log" "'weight' must be a number > 0, got 0" --device cpu "$recipes/smolvla.lua" output_dir="$work/e3" \
  steps=1 "dataset.mixture=[{\"root\": \"$work/a\", \"weight\": 0}]"
refused "$work/e4.log" "is not a LeRobot dataset" --device cpu "$recipes/smolvla.lua" output_dir="$work/e4" steps=1 \
  "dataset.mixture=[{\"root\": \"$work/nowhere\"}]"
refused "$work/e5.log" "rename_map names 'observation.images.side'" --device cpu "$recipes/smolvla.lua" \
  output_dir="$work/e5" steps=1 \
  "dataset.mixture=[{\"root\": \"$work/a\", \"rename_map\": {\"observation.images.side\": \"observation.images.top\"}}]"
refused "$work/e6.log" "leave dataset.root and dataset.repo_id empty" --device cpu "$recipes/smolvla.lua" \
  output_dir="$work/e6" steps=1 dataset.root="$work/a" "$mix"
refused "$work/e7.log" "dataset.weighting = 'uniform'" --device cpu "$recipes/smolvla.lua" output_dir="$work/e7" \
  steps=1 dataset.weighting=uniform "$mix"
refused "$work/e8.log" "dataset.stats = 'mean'" --device cpu "$recipes/smolvla.lua" output_dir="$work/e8" steps=1 \
  dataset.stats=mean "$mix"
refused "$work/e9.log" "'action' is 2 wide and the widest dataset's 6" --device cpu "$recipes/act_ddp.lua" \
  output_dir="$work/e9" steps=1 "${act[@]}" "dataset.mixture=[{\"root\": \"$work/a\"}, {\"root\": \"$work/six\"}]"
echo "mixture_train: all checks passed"
