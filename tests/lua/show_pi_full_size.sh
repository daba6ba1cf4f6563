#!/usr/bin/env bash
# `lrhost show` plans pi05 at LeRobot's full size (4.1 B parameters) from a pretrained folder that holds
# only LeRobot's config.json (three 224x224 cameras, as pi05_base): no weights read, no tokenizer, and
# the policy never built — the whole show stays far below the 16 GB an fp32 model would take. Checks
# the plan against LeRobot's counts (pi0.md §1.1, §10.1: 813 tensors, 4,143,404,816 parameters,
# 3,248,572,176 that receive a gradient; DDP fp32 bytes = 4 B per parameter, grads per trainable one,
# AdamW two moments), ZeRO-3 on 4 ranks about a quarter of that, and gradient checkpointing peaking at
# hundreds of MB of activations per sample (the inputs kept plus one pair's recomputation) where the
# plan without it measures GiB.
# Usage: show_pi_full_size.sh LRHOST WORK_DIR FIXTURES_DIR RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 fixtures=$3 recipes=$4
rm -rf "$work"
mkdir -p "$work/pi05_base"
python3 - "$fixtures/policies/pi05_config_defaults.json" "$work/pi05_base/config.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))["config"]
cameras = {f"observation.images.{k}": {"type": "VISUAL", "shape": [3, 224, 224]}
           for k in ("base_0_rgb", "left_wrist_0_rgb", "right_wrist_0_rgb")}
config["input_features"] = {**cameras, "observation.state": {"type": "STATE", "shape": [32]}}
config["output_features"] = {"action": {"type": "ACTION", "shape": [32]}}
json.dump(config, open(sys.argv[2], "w"), indent=4)
PY
show() { # show OUT.json [overrides...]: the plan as JSON, and the peak RSS in KiB in OUT.rss
  local out=$1
  shift
  # The peak RSS of the child (getrusage, KiB on Linux): no dependency on GNU time.
  if ! python3 -c 'import resource, subprocess, sys
with open(sys.argv[1], "w") as out, open(sys.argv[1] + ".stderr", "w") as err:
    code = subprocess.run(["timeout", "300"] + sys.argv[3:], stdout=out, stderr=err).returncode
open(sys.argv[2], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)' "$out" "$out.rss" "$exe" show --json "$recipes/pi05.lua" --gpus 4 \
      "policy.pretrained_path=$work/pi05_base" "$@"; then
    cat "$out.stderr" >&2
    echo "FAIL: lrhost show $*" >&2
    exit 1
  fi
}
show "$work/ddp.json"
show "$work/zero3_ckpt.json" parallelism.dp_shard=4 accelerator.mixed_precision=bf16 policy.gradient_checkpointing=true
python3 - "$work/ddp.json" "$work/zero3_ckpt.json" <<'PY'
import json, sys
ddp_doc, zero3_doc = (json.load(open(p))["memory_plan"] for p in sys.argv[1:3])
rss = [int(open(p + ".rss").read().split()[-1]) for p in sys.argv[1:3]]
def fail(message):
    sys.exit("FAIL: " + message)
for plan in (ddp_doc, zero3_doc):
    if plan["parameters"] != 4143404816: fail(f"parameters {plan['parameters']} != LeRobot's 4143404816")
    if plan["trainable"] != 3248572176: fail(f"trainable {plan['trainable']} != 3248572176 (those with gradients)")
ddp = {s["name"]: s for s in ddp_doc["strategies"]}["ddp"]
expect = {"parameter_bytes": 4143404816 * 4, "gradient_bytes": 3248572176 * 4, "optimizer_bytes": 3248572176 * 8}
for key, value in expect.items():
    if ddp[key] != value: fail(f"ddp {key} {ddp[key]} != {value}")
zero3 = {s["name"]: s for s in zero3_doc["strategies"]}["zero-3"]
if not (ddp["persistent_bytes"] / 4 <= zero3["persistent_bytes"] <= ddp["persistent_bytes"] / 4 * 1.01):
    fail(f"zero-3 on 4 ranks keeps {zero3['persistent_bytes']} bytes, not a quarter of {ddp['persistent_bytes']}")
plain, ckpt = ddp_doc["activation_bytes_per_sample"], zero3_doc["activation_bytes_per_sample"]
if not (plain > 1 << 30): fail(f"activations without checkpointing {plain} bytes per sample: expected GiB")
# With checkpointing the plan is the backward's peak: the layer pairs' inputs kept (under 400 MiB) plus
# one pair recomputed with its backward, at most 3 times that pair's share of the figure without
# checkpointing (its saved activations, their gradients, the recomputed copy); 18 pairs.
if not (0 < ckpt < (400 << 20) + 3 * plain / 18 and ckpt * 5 < plain):
    fail(f"activations with checkpointing {ckpt} bytes per sample vs {plain} without")
if max(rss) > 6 << 20: fail(f"show's peak RSS {max(rss)} KiB: the 4 B model must not be built")
print(f"ok: pi05 planned at full size: {ddp_doc['parameters']} parameters, DDP {ddp['persistent_bytes'] / 2**30:.1f} GiB, "
      f"ZeRO-3/4 {zero3['persistent_bytes'] / 2**30:.1f} GiB per rank, activations {plain / 2**20:.0f} -> "
      f"{ckpt / 2**20:.0f} MiB per sample with checkpointing, peak RSS {max(rss) / 2**20:.1f} GiB")
PY
