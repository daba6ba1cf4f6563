"""Key/shape/dtype tables and config field lists of LeRobot's ACT and Diffusion policies (the oracle).

Instantiates LeRobot 0.6.1's ACTPolicy / DiffusionPolicy for the configurations of
reference/lerobot.md §4 and writes, per configuration, a JSON table to OUT_DIR:
  {"lerobot_version", "config": {field: value}, "num_tensors", "num_elements", "num_parameters",
   "state_dict": {key: [shape, dtype]} (state_dict order), "parameters": [named_parameters order]}
The parameter order is the optimizer's parameter index order (optimizer_state.safetensors).
With --head-repo it also lists the config dataclass fields of 0.6.1 next to those of LeRobot HEAD,
read (never imported) from the bare mirror with `git show HEAD:<path>` and Python's ast, so the
differences between the oracle and the reference are explicit.

  python policy_keys.py OUT_DIR [--head-repo /work/.mirror/huggingface+lerobot/repo] [--summary-md F]
                        [--compare-lrhost LRHOST.json] [--fixtures tests/fixtures/policies]
With --compare-lrhost it checks policy_keys.lua's dump of lrhost's policies (same configurations)
against the tables: key set, shapes, dtypes, parameter order (by shape), optimizer groups and every
config value (lrhost may add HEAD-only fields); with --fixtures it checks the committed tables.

No random draws matter here (only shapes), and no weights are downloaded:
pretrained_backbone_weights is None in every configuration.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lerobot_compat  # noqa: E402,F401  (offline hub, before any lerobot import)

import torch  # noqa: E402
from lerobot.configs.policies import PreTrainedConfig  # noqa: E402
from lerobot.configs.types import FeatureType, PolicyFeature  # noqa: E402
from lerobot.policies.act.configuration_act import ACTConfig  # noqa: E402
from lerobot.policies.act.modeling_act import ACTPolicy  # noqa: E402
from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig  # noqa: E402
from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy  # noqa: E402

# LeRobot 0.6.1's Diffusion defaults are HEAD's (horizon 64, 32 actions, BatchNorm, one encoder per
# camera: reference/lerobot.md §4.2, PR #3202). The second Diffusion table keeps the older defaults
# (0.4.4's: horizon 16, 8 actions, GroupNorm, one shared encoder), set explicitly, so the other
# module tree (GroupNorm, shared encoder) stays covered. The table names are kept for the fixtures.
DIFFUSION_044_DEFAULTS = dict(
    horizon=16,
    n_action_steps=8,
    use_group_norm=True,
    use_separate_rgb_encoder_per_camera=False,
)


def features(state: int, action: int, image: tuple[int, ...] | None, camera: str = "observation.images.top"):
    inputs = {"observation.state": PolicyFeature(FeatureType.STATE, (state,))}
    if image is not None:
        inputs[camera] = PolicyFeature(FeatureType.VISUAL, tuple(image))
    return inputs, {"action": PolicyFeature(FeatureType.ACTION, (action,))}


def configurations() -> dict[str, tuple[type, PreTrainedConfig]]:
    """The §4 configurations: name -> (policy class, config)."""
    act_in, act_out = features(14, 14, (3, 480, 640))
    dif_in, dif_out = features(2, 2, (3, 96, 96))
    return {
        "act_ref": (ACTPolicy, ACTConfig(input_features=act_in, output_features=act_out, pretrained_backbone_weights=None)),
        "diffusion_ref_head_defaults": (
            DiffusionPolicy,
            DiffusionConfig(input_features=dif_in, output_features=dif_out, pretrained_backbone_weights=None),
        ),
        "diffusion_ref_044_defaults": (
            DiffusionPolicy,
            DiffusionConfig(input_features=dif_in, output_features=dif_out, pretrained_backbone_weights=None,
                            **DIFFUSION_044_DEFAULTS),
        ),
    }


def jsonable(v):
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, PolicyFeature):
        return {"type": v.type.value, "shape": list(v.shape)}
    if hasattr(v, "value") and not isinstance(v, (int, float, str, bool)):
        return v.value
    if isinstance(v, Path):
        return str(v)
    return v


def table(policy: torch.nn.Module, config: PreTrainedConfig) -> dict:
    import importlib.metadata as md

    sd = policy.state_dict()
    return {
        "lerobot_version": md.version("lerobot"),
        "config": {f.name: jsonable(getattr(config, f.name)) for f in dataclasses.fields(config)},
        "num_tensors": len(sd),
        "num_elements": sum(t.numel() for t in sd.values()),
        "num_parameters": len(list(policy.parameters())),
        "state_dict": {k: [list(t.shape), str(t.dtype).removeprefix("torch.")] for k, t in sd.items()},
        "parameters": [n for n, _ in policy.named_parameters()],
        "param_groups": param_groups(policy),
    }


def param_groups(policy) -> list[list]:
    """get_optim_params() as [[number of parameters, lr or -1 (the optimizer's lr)], ...]."""
    groups = policy.get_optim_params()
    if isinstance(groups, (list, tuple)) and groups and isinstance(groups[0], dict):
        return [[len(list(g["params"])), g.get("lr", -1)] for g in groups]
    return [[len(list(groups)), -1]]


def compare_lrhost(tables: dict, lrhost: dict) -> list[str]:
    """lrhost's dump (policy_keys.lua) against LeRobot's tables; returns the differences."""
    bad = []
    for name, t in tables.items():
        if name not in lrhost:
            bad.append(f"{name}: missing in the lrhost dump")
            continue
        got = lrhost[name]
        ref_sd, got_sd = t["state_dict"], {k: [list(v[0]), v[1]] for k, v in got["state_dict"].items()}
        missing = [k for k in ref_sd if k not in got_sd]
        extra = [k for k in got_sd if k not in ref_sd]
        if missing:
            bad.append(f"{name}: {len(missing)} LeRobot keys missing in lrhost: {missing[:12]}")
        if extra:
            bad.append(f"{name}: {len(extra)} keys only in lrhost: {extra[:12]}")
        for k in ref_sd:
            if k in got_sd and got_sd[k] != ref_sd[k]:
                bad.append(f"{name}: {k}: lrhost {got_sd[k]} vs LeRobot {ref_sd[k]}")
        ref_shapes = [ref_sd[n][0] for n in t["parameters"]]
        got_shapes = [list(s) for s in got["param_shapes"]]
        if ref_shapes != got_shapes:
            i = next((i for i, (a, b) in enumerate(zip(ref_shapes, got_shapes)) if a != b), min(len(ref_shapes), len(got_shapes)))
            bad.append(f"{name}: parameter order differs ({len(got_shapes)} vs {len(ref_shapes)} parameters); first "
                       f"difference at #{i} (LeRobot {t['parameters'][i] if i < len(t['parameters']) else '-'})")
        if [list(g) for g in got["param_groups"]] != t["param_groups"]:
            bad.append(f"{name}: param groups lrhost {got['param_groups']} vs LeRobot {t['param_groups']}")
        # A Lua table cannot hold nil, so null fields are absent from the dump: absent reads as null
        # here (config.json's key set is checked by policy_oracle.py run, on the real file).
        for k, v in t["config"].items():
            g = got["config"].get(k)
            if g != v and not (k == "device" and g in (None, "cpu")):
                bad.append(f"{name}: config {k}: lrhost {g!r} vs LeRobot {v!r}")
        for k in got["config"]:
            if k not in t["config"] and k != "type":
                bad.append(f"{name}: config key {k!r} only in lrhost")
        n = sum(1 for k in ref_sd if k in got_sd and got_sd[k] == ref_sd[k])
        print(f"{name}: {n}/{len(ref_sd)} state_dict entries equal, {len(got_shapes)} parameters, "
              f"groups {got['param_groups']}")
    return bad


def dump_table(t: dict) -> str:
    """JSON with one line per state_dict entry / parameter name, so diffs of the fixtures are readable."""
    parts = []
    for k, v in t.items():
        if k == "state_dict":
            rows = ",\n".join(f"  {json.dumps(n)}: {json.dumps(x)}" for n, x in v.items())
            parts.append(f' "state_dict": {{\n{rows}\n }}')
        elif k == "parameters":
            rows = ",\n".join(f"  {json.dumps(n)}" for n in v)
            parts.append(f' "parameters": [\n{rows}\n ]')
        else:
            parts.append(f" {json.dumps(k)}: {json.dumps(v)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def head_fields(repo: str, path: str, cls: str) -> list[str]:
    """Annotated class-body fields of `cls` in HEAD:`path` (bare git mirror), in order."""
    src = subprocess.run(["git", "-C", repo, "show", f"HEAD:{path}"], check=True, capture_output=True, text=True).stdout
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    raise SystemExit(f"class {cls} not found in HEAD:{path}")


def field_report(repo: str) -> list[str]:
    base_oracle = [f.name for f in dataclasses.fields(PreTrainedConfig)]
    base_head = head_fields(repo, "src/lerobot/configs/policies.py", "PreTrainedConfig")
    lines = []

    def compare(label: str, old: list[str], new: list[str]) -> None:
        only_old = [f for f in old if f not in new]
        only_new = [f for f in new if f not in old]
        same_order = [f for f in old if f in new] == [f for f in new if f in old]
        lines.append(
            f"- {label}: 0.6.1 {len(old)} fields, HEAD {len(new)}; only in 0.6.1: {only_old or 'none'}; "
            f"only in HEAD: {only_new or 'none'}; common order identical: {same_order}"
        )

    compare("PreTrainedConfig (base)", base_oracle, base_head)
    for cls, path in (
        (ACTConfig, "src/lerobot/policies/act/configuration_act.py"),
        (DiffusionConfig, "src/lerobot/policies/diffusion/configuration_diffusion.py"),
    ):
        own_oracle = [f.name for f in dataclasses.fields(cls) if f.name not in base_oracle]
        own_head = [f for f in head_fields(repo, path, cls.__name__) if f not in base_head]  # minus redeclared
        compare(cls.__name__ + " (own fields)", own_oracle, own_head)
        lines.append(f"  0.6.1 {cls.__name__} field order: {[f.name for f in dataclasses.fields(cls)]}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--head-repo", help="bare git mirror of LeRobot HEAD, for the config field comparison")
    ap.add_argument("--summary-md", help="also write the summary lines to this markdown file")
    ap.add_argument("--compare-lrhost", help="policy_keys.lua's dump: exit 1 unless it equals LeRobot's tables")
    ap.add_argument("--fixtures", help="folder of committed tables (tests/fixtures/policies): exit 1 if stale")
    args = ap.parse_args()
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    tables = {}
    for name, (policy_cls, cfg) in configurations().items():
        tables[name] = t = table(policy_cls(cfg), cfg)
        (out / f"{name}.json").write_text(dump_table(t))
        dtypes = sorted({d for _, d in t["state_dict"].values()})
        lines.append(
            f"- {name}: {t['num_tensors']} tensors, {t['num_elements']:,} elements, "
            f"{t['num_parameters']} parameters, dtypes {dtypes}"
        )
    a, b = tables["diffusion_ref_head_defaults"]["state_dict"], tables["diffusion_ref_044_defaults"]["state_dict"]
    only_head = [k for k in a if k not in b]
    only_044 = [k for k in b if k not in a]
    reshaped = [k for k in a if k in b and a[k] != b[k]]
    lines.append(
        f"- diffusion HEAD-defaults vs 0.4.4-style: {len(only_head)} keys only with HEAD defaults "
        f"(e.g. {only_head[:3]}), {len(only_044)} only with 0.4.4-style config (e.g. {only_044[:3]}), "
        f"{len(reshaped)} common keys with different shape/dtype"
    )
    if args.head_repo:
        lines += field_report(args.head_repo)
    print("\n".join(lines))
    if args.summary_md:
        Path(args.summary_md).write_text("\n".join(lines) + "\n")
    bad = []
    if args.fixtures:
        for name in tables:
            fixture = Path(args.fixtures) / f"{name}.json"
            if not fixture.exists() or fixture.read_text() != dump_table(tables[name]):
                bad.append(f"{fixture} is stale: regenerate with policy_keys.py {args.fixtures}")
    if args.compare_lrhost:
        with open(args.compare_lrhost) as f:
            bad += compare_lrhost(tables, json.load(f))
    for b in bad:
        print("MISMATCH " + b)
    if args.compare_lrhost or args.fixtures:
        print("FAILED" if bad else "OK: lrhost's tables equal LeRobot's")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
