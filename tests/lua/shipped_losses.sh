#!/usr/bin/env bash
# Pins the losses and gradient norms of every shipped policy recipe: each trains a few steps on CPU
# (one process, FSDP on 2 ranks, hybrid on 4) and its metrics.jsonl must equal
# tests/fixtures/shipped_losses.json bit for bit, so a refactor that changes what a recipe computes
# cannot pass unnoticed. Bits are reproducible across x86 machines because the kernels' ISA is pinned
# (ATen, MKL and oneDNN all at AVX2, one thread): without that, the same code gives different
# last bits on an AVX-512 and an AVX2 machine.
# Usage: shipped_losses.sh LRHOST WORK_DIR RECIPES_DIR FIXTURE      (LRHOST_UPDATE_PINS=1 rewrites FIXTURE)
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
runs = {}
for name in cases:
    rows = [json.loads(line) for line in open(os.path.join(work, name, "metrics.jsonl"))]
    runs[name] = {key: [row[key] for row in rows] for key in ("step", "loss", "grdn")}
if os.environ.get("LRHOST_UPDATE_PINS") == "1":
    with open(fixture, "w") as f:  # one line per recipe and key, so a change reads as a diff
        f.write("{\n" + ",\n".join(f' "{name}": {{' + ", ".join(f'"{k}": {json.dumps(v)}' for k, v in run.items()) + "}"
                                    for name, run in runs.items()) + "\n}\n")
    print(f"wrote {fixture}")
    sys.exit(0)
pinned = json.load(open(fixture))
bad = []
for name in cases:
    if name not in pinned:
        bad.append(f"{name}: no pinned values in {fixture} (LRHOST_UPDATE_PINS=1 writes them)")
        continue
    for key, values in runs[name].items():
        if values != pinned[name][key]:
            bad.append(f"{name} {key}: got {values}, pinned {pinned[name][key]}")
if set(pinned) - set(cases):
    bad.append(f"pinned but not run: {sorted(set(pinned) - set(cases))}")
if bad:
    sys.exit("FAIL: a shipped recipe no longer trains as pinned (if the change is meant, rerun with "
             "LRHOST_UPDATE_PINS=1 and say why in the commit):\n  " + "\n  ".join(bad))
print(f"ok: {len(cases)} shipped recipes give their pinned losses and gradient norms bit for bit")
EOF
