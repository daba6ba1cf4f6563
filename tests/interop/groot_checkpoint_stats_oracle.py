"""Test oracle for GR00T N1.7's checkpoint-statistics numerics (host/policy/groot/groot_checkpoint_stats):
LeRobot 0.6.1's own _load_n1_7_checkpoint_stats, _load_n1_7_checkpoint_action_horizon,
_load_n1_7_checkpoint_video_modality_keys, GrootN17PackInputsStep (with raw_stats / modality_config) and
GrootN17ActionDecodeStep (absolute groups), run on synthetic checkpoint folders. No model, no Hub.

    python groot_checkpoint_stats_oracle.py OUT

Each case writes OUT/<case>/ckpt/{statistics.json,processor_config.json} for a made-up embodiment with two
state groups and two action groups (plus a decoy tag), with unround float stats and one dim whose bounds
are equal. Case "pct": use_percentiles on, clip_outliers on; case "minmax": off / off (clip only matters to
the pack step; the decode always clips). What is exercised: the flat stats, the horizon and camera keys,
the packed state / action / mask (grouped normalisation), a state and an action narrower than the groups
(the flat fallback with its 0 / 1 padding), and the decode of a padded chunk longer than the valid
horizon, of a single (B, D) action and with env_action_dim 0.

Writes OUT/<case>/{inputs,outputs}.safetensors and OUT/case.json (cases, their flags, sizes, LeRobot's
horizon and camera keys).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lerobot_compat  # noqa: E402,F401  (offline hub; before any lerobot import)

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from lerobot.lerobot_types import TransitionKey  # noqa: E402
from lerobot.policies.groot.processor_groot import (  # noqa: E402
    GrootN17ActionDecodeStep,
    GrootN17PackInputsStep,
    _load_n1_7_checkpoint_action_horizon,
    _load_n1_7_checkpoint_stats,
    _load_n1_7_checkpoint_video_modality_keys,
)

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
torch.set_num_threads(1)
g = torch.Generator().manual_seed(17)

TAG = "made_up_bot"
STATE_GROUPS = [("arm", 3), ("gripper", 1)]
ACTION_GROUPS = [("arm_delta_free", 3), ("gripper", 1)]
B, T = 2, 5
SIZES = {"max_state_dim": 8, "max_action_dim": 8, "action_horizon": 6}
ENV_ACTION_DIM = 3


def group_stats(dim: int, equal_last: bool) -> dict[str, list[float]]:
    lo = torch.randn(dim, generator=g, dtype=torch.float64) * 0.7 - 0.3
    hi = lo + torch.rand(dim, generator=g, dtype=torch.float64) * 2.3 + 0.1
    q01 = lo + (hi - lo) * 0.05
    q99 = hi - (hi - lo) * 0.07
    if equal_last:  # bounds that are equal: the pack step maps the dim to 0
        hi[-1] = lo[-1]
        q99[-1] = q01[-1]
    mean = (lo + hi) / 2
    std = (hi - lo) / 4 + 0.01
    return {k: v.tolist() for k, v in {"min": lo, "max": hi, "q01": q01, "q99": q99, "mean": mean, "std": std}.items()}


def write_checkpoint(folder: Path, use_percentiles: bool, clip: bool) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    stats = {
        TAG: {
            "state": {k: group_stats(d, k == "gripper") for k, d in STATE_GROUPS},
            "action": {k: group_stats(d, k == "arm_delta_free") for k, d in ACTION_GROUPS},
        },
        "decoy_bot": {"state": {"arm": group_stats(3, False)}, "action": {"arm": group_stats(3, False)}},
    }
    modality = {
        "state": {"delta_indices": [0], "modality_keys": [k for k, _ in STATE_GROUPS]},
        "action": {
            "delta_indices": list(range(4)),  # valid horizon 4 < action_horizon 6 < chunk 8
            "modality_keys": [k for k, _ in ACTION_GROUPS],
            "action_configs": [
                {"rep": "ABSOLUTE", "type": "NON_EEF", "format": "DEFAULT", "state_key": None},
                {"rep": "ABSOLUTE", "type": "NON_EEF", "format": "DEFAULT", "state_key": None},
            ],
        },
        "video": {"delta_indices": [0], "modality_keys": ["wrist_view", "front_view"]},
    }
    processor = {
        "processor_class": "Gr00tN1d7Processor",
        "processor_kwargs": {
            "use_percentiles": use_percentiles,
            "clip_outliers": clip,
            "use_relative_action": False,
            "modality_configs": {TAG: modality, "decoy_bot": {"state": {"modality_keys": ["arm"]}}},
        },
    }
    (folder / "statistics.json").write_text(json.dumps(stats, indent=1))
    (folder / "processor_config.json").write_text(json.dumps(processor, indent=1))


def run_case(name: str, use_percentiles: bool, clip: bool) -> dict:
    out = OUT / name
    ckpt = out / "ckpt"
    write_checkpoint(ckpt, use_percentiles, clip)
    processor_kwargs = json.loads((ckpt / "processor_config.json").read_text())["processor_kwargs"]
    raw_stats = json.loads((ckpt / "statistics.json").read_text())[TAG]
    modality_config = processor_kwargs["modality_configs"][TAG]

    flat = _load_n1_7_checkpoint_stats(ckpt, processor_kwargs, TAG)
    horizon = _load_n1_7_checkpoint_action_horizon(processor_kwargs, TAG)
    cameras = _load_n1_7_checkpoint_video_modality_keys(processor_kwargs, TAG)
    outputs = {}
    for modality, flat_stats in flat.items():
        for stat, values in flat_stats.items():
            outputs[f"flat.{modality}.{stat}"] = torch.tensor(values, dtype=torch.float64)

    inputs = {
        "state": torch.randn(B, 4, generator=g) * 1.5,
        "action": torch.randn(B, T, 4, generator=g) * 1.5,
        "narrow_state": torch.randn(B, 3, generator=g) * 1.5,
        "narrow_action": torch.randn(B, T, 3, generator=g) * 1.5,
        "chunk": torch.randn(B, 8, SIZES["max_action_dim"], generator=g) * 1.4,
        "single": torch.randn(B, SIZES["max_action_dim"], generator=g) * 1.4,
    }

    def pack_step() -> GrootN17PackInputsStep:
        return GrootN17PackInputsStep(
            embodiment_tag=TAG,
            valid_action_horizon=horizon,
            stats=flat,
            clip_outliers=clip,
            use_percentiles=use_percentiles,
            raw_stats=raw_stats,
            modality_config=modality_config,
            **SIZES,
        )

    for prefix, state_key, action_key in (("pack", "state", "action"), ("narrow", "narrow_state", "narrow_action")):
        packed = pack_step()({
            TransitionKey.OBSERVATION: {"observation.state": inputs[state_key].clone()},
            TransitionKey.ACTION: inputs[action_key].clone(),
            TransitionKey.COMPLEMENTARY_DATA: {"task": "do it"},
        })
        outputs[f"{prefix}.state"] = packed[TransitionKey.OBSERVATION]["state"]
        outputs[f"{prefix}.action"] = packed[TransitionKey.ACTION]
        outputs[f"{prefix}.action_mask"] = packed[TransitionKey.COMPLEMENTARY_DATA]["action_mask"]

    for env_dim, suffix in ((ENV_ACTION_DIM, ""), (0, ".full")):
        decode = GrootN17ActionDecodeStep(
            env_action_dim=env_dim,
            raw_stats=raw_stats,
            modality_config=modality_config,
            use_percentiles=use_percentiles,
            use_relative_action=False,
        )
        for key in ("chunk", "single"):
            outputs[f"decode.{key}{suffix}"] = decode({TransitionKey.ACTION: inputs[key].clone()})[TransitionKey.ACTION]

    save_file({k: v.contiguous() for k, v in inputs.items()}, str(out / "inputs.safetensors"))
    save_file({k: v.contiguous() for k, v in outputs.items()}, str(out / "outputs.safetensors"))
    return {
        "name": name,
        "use_percentiles": use_percentiles,
        "clip_outliers": clip,
        "valid_action_horizon": horizon,
        "video_modality_keys": cameras,
    }


cases = [run_case("pct", True, True), run_case("minmax", False, False)]
(OUT / "case.json").write_text(
    json.dumps({"tag": TAG, "sizes": SIZES, "env_action_dim": ENV_ACTION_DIM, "cases": cases}, indent=2)
)
