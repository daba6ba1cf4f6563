#!/usr/bin/env bash
# Pins the losses and gradient norms of every shipped policy recipe: each trains a few steps on CPU
# (one process, FSDP on 2 ranks, hybrid on 4) and its metrics.jsonl must equal
# tests/fixtures/shipped_losses.json bit for bit, so a refactor that changes what a recipe computes
# cannot pass unnoticed. The kernels' ISA is pinned (ATen, MKL and oneDNN at AVX2, one thread), but the
# last bits still differ between CPU models (an AMD EPYC without AVX-512 and a Zen 4 EPYC differ by an
# ulp from the first backward on: kernels choose their paths by the machine), so the fixture keeps
# pins per CPU model (vendor, family, model from /proc/cpuinfo). On a pinned CPU the check is bit for
# bit; on another one it compares with every pinned CPU within 1e-3 relative and says so: ulp-level
# kernel differences grow over three steps to ~1e-4 at most (the largest seen, Diffusion's third
# gradient norm), while a change in what a recipe computes moves these figures by far more.
# Usage: shipped_losses.sh LRHOST WORK_DIR RECIPES_DIR FIXTURE
#   LRHOST_UPDATE_PINS=1 writes this CPU's pins into FIXTURE (the other CPUs' pins stay)
set -euo pipefail
exe=$1 work=$2 recipes=$3 fixture=$4
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMP_NUM_THREADS=1 ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2
common="--device cpu steps=3 log_freq=1 save_freq=1000 eval_batches=1"
act_tiny="policy.dim_model=64 policy.dim_feedforward=128 policy.n_encoder_layers=1 policy.n_vae_encoder_layers=1"
# name | launcher ranks | recipe | overrides beyond $common
cases=(
  "act_ddp|1|act_ddp.lua|"
  "act_fsdp|2|act_fsdp.lua|$act_tiny"
  "act_hybrid|4|examples/act_hybrid.lua|$act_tiny batch_size=2"
  "diffusion_ddp|1|diffusion_ddp.lua|policy.down_dims=[64,128] policy.diffusion_step_embed_dim=32 batch_size=4"
  "smolvla|1|smolvla.lua|"
  "pi0|1|pi0.lua|"
  "pi05|1|pi05.lua|"
  "pi05_fsdp|2|pi05.lua|parallelism.dp_shard=2 batch_size=4"
  "groot|1|groot.lua|"
  "groot_fsdp|2|groot.lua|parallelism.dp_shard=2 batch_size=4"
)
for case in "${cases[@]}"; do
  IFS='|' read -r name ranks recipe overrides <<< "$case"
  # shellcheck disable=SC2086
  timeout 300 "$exe" --nproc "$ranks" "$recipes/$recipe" $common output_dir="$work/$name" $overrides \
    > "$work/$name.log" 2>&1 || { tail -30 "$work/$name.log" >&2; fail "$name did not train"; }
done
python3 - "$work" "$fixture" "${cases[@]}" <<'EOF'
import json, os, sys
work, fixture, cases = sys.argv[1], sys.argv[2], [c.split("|")[0] for c in sys.argv[3:]]
fields = {}
for line in open("/proc/cpuinfo"):
    key, _, value = line.partition(":")
    fields.setdefault(key.strip(), value.strip())
cpu = f'{fields.get("vendor_id", "?")} family {fields.get("cpu family", "?")} model {fields.get("model", "?")}'
runs = {}
for name in cases:
    rows = [json.loads(line) for line in open(os.path.join(work, name, "metrics.jsonl"))]
    runs[name] = {key: [row[key] for row in rows] for key in ("step", "loss", "grdn")}
pins = json.load(open(fixture)) if os.path.exists(fixture) else {}
if os.environ.get("LRHOST_UPDATE_PINS") == "1":
    pins[cpu] = runs
    with open(fixture, "w") as f:  # one line per CPU, recipe and key, so a change reads as a diff
        f.write("{\n" + ",\n".join(
            f' "{machine}": {{\n' + ",\n".join(
                f'  "{name}": {{' + ", ".join(f'"{k}": {json.dumps(v)}' for k, v in run.items()) + "}"
                for name, run in machine_runs.items()) + "\n }"
            for machine, machine_runs in pins.items()) + "\n}\n")
    print(f"wrote the pins of {cpu} into {fixture}")
    sys.exit(0)


def differences(pinned, close):
    bad = []
    for name in cases:
        if name not in pinned:
            bad.append(f"{name}: not pinned")
            continue
        for key, values in runs[name].items():
            expected = pinned[name][key]
            same = values == expected if not close else (
                len(values) == len(expected) and all(abs(a - b) <= 1e-3 * abs(b) for a, b in zip(values, expected)))
            if not same:
                bad.append(f"{name} {key}: got {values}, pinned {expected}")
    if set(pinned) - set(cases):
        bad.append(f"pinned but not run: {sorted(set(pinned) - set(cases))}")
    return bad


if cpu in pins:
    bad = differences(pins[cpu], close=False)
    if bad:
        sys.exit(f"FAIL: a shipped recipe no longer trains as pinned on {cpu} (if the change is meant, rerun with "
                 "LRHOST_UPDATE_PINS=1 and say why in the commit):\n  " + "\n  ".join(bad))
    print(f"ok: {len(cases)} shipped recipes give their pinned losses and gradient norms bit for bit on {cpu}")
    sys.exit(0)
closest = {machine: differences(machine_runs, close=True) for machine, machine_runs in pins.items()}
if not pins or all(closest.values()):
    report = "\n".join(f" against {machine}:\n  " + "\n  ".join(bad) for machine, bad in closest.items())
    sys.exit(f"FAIL: {cpu} has no pins and its figures are not within 1e-3 of any pinned CPU's:\n{report}")
match = next(machine for machine, bad in closest.items() if not bad)
print(f"ok (loosely): {cpu} has no pins of its own; every figure is within 1e-3 of {match}'s. "
      "LRHOST_UPDATE_PINS=1 adds this CPU's pins, making the check bit for bit here")
EOF
