#!/usr/bin/env bash
# The per-GPU-size guide of docs/multi_gpu.md: for pi05 and SmolVLA at LeRobot's full size, full
# fine-tuning vs LoRA (LeRobot's default targets), gradient checkpointing off and on, on 1/2/4/8
# GPUs, the largest batch per GPU that `lrhost show --gpu-memory 24GiB,40GiB,48GiB,80GiB` plans under
# DDP, ZeRO-2 and ZeRO-3. Nothing runs on a GPU: the figures are the plan's (parameters, gradients,
# optimizer state, gathered parameters, activations measured on the CPU in the policy's dtypes, a
# reserve for the CUDA context; with checkpointing the activations' peak through the backward: the
# layer inputs kept plus one layer's recomputation). Prints a markdown table per policy.
#   tests/bench/gpu_size_guide.sh LRHOST WORK_DIR [ORACLE_PYTHON]
# pi05's base is a config.json at LeRobot's geometry (no weights: show reads none); SmolVLA's needs the
# SmolVLM2-500M config, which the interop oracle writes (smolvla_oracle.py vlm --full-size) when
# ORACLE_PYTHON is given.
set -euo pipefail
exe=$1 work=$2 py=${3:-}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
recipes="$here/../../recipes"
mkdir -p "$work"
export OMP_NUM_THREADS=2
sizes=24GiB,40GiB,48GiB,80GiB

# pi05 at LeRobot's size: a tiny run's config.json with LeRobot's image, chunk and language sizes,
# pi05_base's three 224x224 cameras, and no geometry.json (a folder without one is LeRobot's geometry).
"$exe" --device cpu "$recipes/pi05.lua" output_dir="$work/pi05_tiny" steps=1 save_freq=1 batch_size=2 eval_batches=1 \
  num_workers=1 > "$work/pi05_tiny.log" 2>&1
mkdir -p "$work/pi05_base"
jq '.image_resolution = [224, 224] | .chunk_size = 50 | .n_action_steps = 50 | .tokenizer_max_length = 200
    | .input_features = ({"observation.state": .input_features["observation.state"]} + ([
        "base_0_rgb", "left_wrist_0_rgb", "right_wrist_0_rgb"] | map({("observation.images." + .):
        {"type": "VISUAL", "shape": [3, 224, 224]}}) | add))' \
  "$work/pi05_tiny/checkpoints/000001/pretrained_model/config.json" > "$work/pi05_base/config.json"
bases=("pi05:$work/pi05_base")
if [ -n "$py" ]; then
  "$py" "$here/../interop/smolvla_oracle.py" vlm "$work/smolvlm_500m" --full-size > "$work/vlm.log" 2>&1
  "$exe" --device cpu "$recipes/smolvla.lua" output_dir="$work/smolvla_tiny" steps=1 save_freq=1 batch_size=2 \
    eval_batches=1 num_workers=1 > "$work/smolvla_tiny.log" 2>&1
  mkdir -p "$work/smolvla_base"
  cp "$work/smolvla_tiny/checkpoints/000001/pretrained_model/"*processor* "$work/smolvla_base/"
  # smolvla_base's three 256x256 cameras (camera1..3), LeRobot's chunk, language and image sizes.
  jq --arg vlm "$work/smolvlm_500m" '.vlm_model_name = $vlm | .num_vlm_layers = 16 | .resize_imgs_with_padding = [512, 512]
      | .chunk_size = 50 | .n_action_steps = 50 | .tokenizer_max_length = 48
      | .input_features = ({"observation.state": .input_features["observation.state"]} + ([1, 2, 3]
          | map({("observation.images.camera" + tostring): {"type": "VISUAL", "shape": [3, 256, 256]}}) | add))' \
    "$work/smolvla_tiny/checkpoints/000001/pretrained_model/config.json" > "$work/smolvla_base/config.json"
  bases+=("smolvla:$work/smolvla_base")
fi

for entry in "${bases[@]}"; do
  policy=${entry%%:*} base=${entry#*:}
  # LeRobot's dtypes: pi05 in its bfloat16 mode (bf16 weights, autocast), SmolVLA in fp32 with bf16 autocast.
  dtype=() && [ "$policy" = pi05 ] && dtype=(policy.dtype=bfloat16)
  echo
  echo "#### $policy (largest batch per GPU: DDP / ZeRO-2 / ZeRO-3; 0: does not fit)"
  echo
  echo "| training | checkpointing | GPUs | trainable | 24 GB | 40 GB | 48 GB | 80 GB |"
  echo "|---|---|---|---|---|---|---|---|"
  for method in full lora; do
    peft=() && [ $method = lora ] && peft=(policy.peft.method_type=LORA)
    for checkpointing in off on; do
      ckpt=() && [ $checkpointing = on ] && ckpt=(policy.gradient_checkpointing=true)
      for gpus in 1 2 4 8; do
        json="$work/plan_${policy}_${method}_${checkpointing}_${gpus}.json"
        LRHOST_PLAN_JSON="$json" "$exe" show "$recipes/$policy.lua" --gpus "$gpus" policy.pretrained_path="$base" \
          accelerator.mixed_precision=bf16 "${dtype[@]}" "${peft[@]}" "${ckpt[@]}" \
          --gpu-memory "$sizes" > "$work/show.log" 2>&1 || { tail -5 "$work/show.log" >&2; exit 1; }
        row=$(jq -r '[.strategies | map({(.name): .largest_batch_per_rank}) | add
                      | [.["ddp"], .["zero-2"], .["zero-3"]] | transpose[] | map(tostring) | join(" / ")] | join(" | ")' "$json")
        trainable=$(jq -r '.trainable' "$json")
        echo "| $method | $checkpointing | $gpus | $trainable | $row |"
      done
    done
  done
done
