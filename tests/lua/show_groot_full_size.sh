#!/usr/bin/env bash
# `lrhost show` plans GR00T N1.7 at LeRobot's full size (3.1 B parameters, 12.6 GB in fp32) from a base
# folder that holds only GR00TN17's config.json (tests/fixtures/groot/base_config: LeRobot's defaults)
# and the hard-coded Cosmos-Reason2-2B backbone: no weights read, no tokenizer (tokenizer_name is
# LeRobot's nvidia/Cosmos-Reason2-2B and the Hugging Face cache is empty), the policy never built — only
# the activation probes' full-width models a few blocks deep (unit.test_policy_groot_plan holds their
# extrapolation equal to a direct measurement).
# Checks the plan against groot.md's meta-device build of LeRobot's GR00TN17 (§1.1, §3.3, §7):
# 3,144,016,000 parameters, 1,620,515,968 trainable by default (the action head), 32.0 GB static per
# GPU under DDP (weights 12.58 + grads 6.48 + AdamW 12.96 GB); everything trainable with tune_llm +
# tune_visual; ZeRO-3 on 4 ranks about a quarter of DDP; and the whole show fast and small.
# Usage: show_groot_full_size.sh LRHOST WORK_DIR FIXTURES_DIR RECIPES_DIR
set -euo pipefail
exe=$1 work=$2 fixtures=$3 recipes=$4
rm -rf "$work"
mkdir -p "$work/hf_empty/hub"
export HF_HOME="$work/hf_empty" HF_HUB_CACHE="$work/hf_empty/hub"
show() { # show OUT.json [overrides...]: the plan as JSON, and the peak RSS in KiB in OUT.rss
  local out=$1
  shift
  # The peak RSS of the child (getrusage, KiB on Linux) and its wall time: no dependency on GNU time.
  if ! python3 -c 'import resource, subprocess, sys, time
start = time.monotonic()
with open(sys.argv[1], "w") as out, open(sys.argv[1] + ".stderr", "w") as err:
    code = subprocess.run(["timeout", "120"] + sys.argv[3:], stdout=out, stderr=err).returncode
open(sys.argv[2], "w").write(f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss} {time.monotonic() - start:.2f}")
sys.exit(code)' "$out" "$out.rss" "$exe" show --json "$recipes/groot.lua" --gpus 4 policy.geometry= \
      "policy.base_model_path=$fixtures/groot/base_config" policy.tokenizer_name=nvidia/Cosmos-Reason2-2B \
      policy.max_state_dim=132 policy.max_action_dim=132 policy.chunk_size=40 policy.n_action_steps=40 "$@"; then
    cat "$out.stderr" >&2
    echo "FAIL: lrhost show $*" >&2
    exit 1
  fi
}
show "$work/ddp.json"
show "$work/all.json" policy.tune_llm=true policy.tune_visual=true
python3 - "$work/ddp.json" "$work/all.json" <<'PY'
import json, sys
ddp_doc, all_doc = (json.load(open(p))["memory_plan"] for p in sys.argv[1:3])
usage = [open(p + ".rss").read().split() for p in sys.argv[1:3]]
rss, seconds = max(int(u[0]) for u in usage), max(float(u[1]) for u in usage)
def fail(message):
    sys.exit("FAIL: " + message)
total, head = 3144016000, 1620515968
for plan in (ddp_doc, all_doc):
    if plan["parameters"] != total: fail(f"parameters {plan['parameters']} != LeRobot's {total}")
if ddp_doc["trainable"] != head: fail(f"trainable {ddp_doc['trainable']} != the action head's {head}")
if all_doc["trainable"] != total: fail(f"tune_llm + tune_visual: trainable {all_doc['trainable']} != {total}")
strategies = lambda doc: {s["name"]: s for s in doc["strategies"]}
ddp = strategies(ddp_doc)["ddp"]
expect = {"parameter_bytes": total * 4, "gradient_bytes": head * 4, "optimizer_bytes": head * 8}
for key, value in expect.items():
    if ddp[key] != value: fail(f"ddp {key} {ddp[key]} != {value}")
if ddp["persistent_bytes"] != 32022255616: fail(f"ddp static {ddp['persistent_bytes']} != 32.0 GB")
if strategies(all_doc)["ddp"]["persistent_bytes"] != total * 16: fail("tune_llm + tune_visual: DDP static != 16 B/param")
zero3 = strategies(ddp_doc)["zero-3"]  # the plan lists every strategy for the 4 GPUs
if not (ddp["persistent_bytes"] / 4 <= zero3["persistent_bytes"] <= ddp["persistent_bytes"] / 4 * 1.01):
    fail(f"zero-3 on 4 ranks keeps {zero3['persistent_bytes']} bytes, not a quarter of {ddp['persistent_bytes']}")
if rss > 6 << 20: fail(f"show's peak RSS {rss} KiB: the 3.1 B model (12.6 GB) must not be built")
if seconds > 90: fail(f"show took {seconds} s")
for name, plan in (("ddp", ddp_doc), ("tune_llm + tune_visual", all_doc)):
    if plan["activation_bytes_per_sample"] <= 0: fail(f"{name}: activations per sample not measured")
if all_doc["activation_bytes_per_sample"] <= ddp_doc["activation_bytes_per_sample"]:
    fail("tuning the backbone keeps no more activations than the head alone")
print(f"ok: groot planned at full size: {ddp_doc['parameters']} parameters ({ddp_doc['trainable']} trainable), "
      f"DDP {ddp['persistent_bytes'] / 1e9:.1f} GB, ZeRO-3/4 {zero3['persistent_bytes'] / 1e9:.2f} GB per rank, "
      f"activations {ddp_doc['activation_bytes_per_sample'] / 2**20:.1f} MiB per sample "
      f"({all_doc['activation_bytes_per_sample'] / 2**20:.1f} with the backbone tuned), "
      f"peak RSS {rss / 2**10:.0f} MiB, {seconds:.1f} s per show")
PY
