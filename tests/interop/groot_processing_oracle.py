"""Test oracle for the numerical parts of GR00T N1.7's processor steps (host/policy/groot/groot_pack,
groot_images): LeRobot 0.6.1's own GrootN17PackInputsStep, GrootN17VLMEncodeStep's image transform
(_build_sample_images -> _transform_n1_7_image_for_vlm_torch), transformers 5.5.4's Qwen2VLImageProcessor
(torchvision backend) and GrootActionUnpackUnnormalizeStep, called on crafted inputs. No model, no tokenizer,
no Hub: the image processor is built from its preprocessor_config values directly.

    python groot_processing_oracle.py OUT

What the inputs exercise: state / action values outside the stats (clipping), a max == min dim, state stats
shorter than D (padded 0 / 1), action_is_pad rows and a chunk shorter than action_horizon, two cameras of a
non-square 40x56 size given as float images in [-0.1, 1.1] (clamp; random values tell truncation from
rounding, a band of k/255 must come back as k), inserted out of alphabetical order, a task that formalizes to
"" and one with punctuation, the inference mask (valid horizon < horizon) and a second embodiment tag, three
image geometries (the tiny 48/44, the full-size 256/230 with patch 16, a letterboxed one with an explicit crop
fraction), a processor whose smart_resize changes the size (patch 14: 48 -> 56, CLIP mean/std), and the unpack
step with and without LIBERO (short action stats, zero-padded there).

Writes OUT/inputs.safetensors, OUT/outputs.safetensors (float32 unless noted) and OUT/case.json (the sizes,
tags, tasks, LeRobot's language strings, geometries and processor configs the C++ check replays).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lerobot_compat  # noqa: E402,F401  (offline hub; before any lerobot import)

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import Qwen2VLImageProcessor  # noqa: E402

from lerobot.lerobot_types import TransitionKey  # noqa: E402
from lerobot.policies.groot.processor_groot import (  # noqa: E402
    GrootActionUnpackUnnormalizeStep,
    GrootN17PackInputsStep,
    GrootN17VLMEncodeStep,
)

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
torch.set_num_threads(1)
g = torch.Generator().manual_seed(5)

B, D_STATE, D_ACTION, T = 2, 6, 6, 5
SIZES = {"max_state_dim": 12, "max_action_dim": 10, "action_horizon": 8, "valid_action_horizon": 8}
INFER_SIZES = {"max_state_dim": 12, "max_action_dim": 10, "action_horizon": 8, "valid_action_horizon": 6}
TASKS = ["Pick up the red cube!", "!!!"]
CAMERAS = ["observation.images.wrist", "observation.images.front"]  # dict order: not alphabetical

# ---------------------------------------------------------------------------------------------- inputs
inputs = {}
for i, cam in enumerate(CAMERAS):
    img = torch.rand(B, 3, 40, 56, generator=g) * 1.2 - 0.1
    # A band of exact k/255 values, which must come back as k (the random rest tells truncation from rounding).
    k = torch.randint(0, 256, (B, 3, 8, 56), generator=g).float()
    img[:, :, :8] = k / 255.0
    inputs[cam] = img
inputs["state"] = torch.randn(B, D_STATE, generator=g) * 2
inputs["action"] = torch.randn(B, T, D_ACTION, generator=g) * 3
inputs["action_is_pad"] = torch.tensor([[False] * T, [False] * (T - 2) + [True] * 2])
# State stats of length 4 (< D 6: the pack step pads min 0 / max 1), dim 2 with max == min.
inputs["stats.state.min"] = torch.tensor([-2.0, -1.0, 0.5, -3.0])
inputs["stats.state.max"] = torch.tensor([2.0, 1.5, 0.5, 1.0])
# Action stats of D, dim 4 with max == min.
inputs["stats.action.min"] = torch.tensor([-3.0, -2.0, -1.0, 0.0, 0.25, -4.0])
inputs["stats.action.max"] = torch.tensor([3.0, 1.0, 2.0, 1.0, 0.25, 4.0])
inputs["chunk"] = torch.randn(B, 8, SIZES["max_action_dim"], generator=g) * 1.5
inputs["chunk"][:, :, 6] = torch.linspace(0.0, 1.0, 8)  # LIBERO gripper values around 0.5
# Unpack stats for LIBERO: length 5 < 7 (the unpack step pads min AND max with 0).
inputs["stats.libero.min"] = torch.tensor([-1.0, -1.0, -1.0, -0.5, -0.5])
inputs["stats.libero.max"] = torch.tensor([1.0, 1.0, 1.0, 0.5, 0.5])

stats = {
    "observation.state": {"min": inputs["stats.state.min"], "max": inputs["stats.state.max"]},
    "action": {"min": inputs["stats.action.min"], "max": inputs["stats.action.max"]},
}

# ---------------------------------------------------------------------------------------- pack (train)
outputs = {}
pack = GrootN17PackInputsStep(embodiment_tag="new_embodiment", stats=stats, **SIZES)
obs = {cam: inputs[cam].clone() for cam in CAMERAS}
obs["observation.state"] = inputs["state"].clone()
packed = pack({
    TransitionKey.OBSERVATION: obs,
    TransitionKey.ACTION: inputs["action"].clone(),
    TransitionKey.COMPLEMENTARY_DATA: {"task": list(TASKS), "action_is_pad": inputs["action_is_pad"].clone()},
})
pobs, pcomp = packed[TransitionKey.OBSERVATION], packed[TransitionKey.COMPLEMENTARY_DATA]
video = pobs["video"]  # (B, T=1, V, H, W, C) uint8 numpy, cameras sorted
outputs["video"] = torch.from_numpy(video.copy())
outputs["state"] = pobs["state"]
outputs["action"] = packed[TransitionKey.ACTION]
outputs["action_mask"] = pcomp["action_mask"]
outputs["embodiment_id"] = pcomp["embodiment_id"]
languages = list(pcomp["language"])

# ------------------------------------------------------------------------------------ pack (inference)
infer = GrootN17PackInputsStep(embodiment_tag="libero_sim", stats=stats, **INFER_SIZES)
iobs = {"observation.state": inputs["state"].clone()}
ipacked = infer({TransitionKey.OBSERVATION: iobs, TransitionKey.COMPLEMENTARY_DATA: {"task": "Open the drawer."}})
outputs["infer.state"] = ipacked[TransitionKey.OBSERVATION]["state"]
outputs["infer.action_mask"] = ipacked[TransitionKey.COMPLEMENTARY_DATA]["action_mask"]
outputs["infer.embodiment_id"] = ipacked[TransitionKey.COMPLEMENTARY_DATA]["embodiment_id"]
infer_languages = list(ipacked[TransitionKey.COMPLEMENTARY_DATA]["language"])
# The VLM step's own language pass (formalize off) over the packed strings: "" -> "Perform the task.".
from lerobot.policies.groot.utils import prepare_n1_7_language_batch  # noqa: E402

vlm_languages = prepare_n1_7_language_batch(languages, B, formalize_language=False)

# --------------------------------------------------------------------------------------- image chains
QWEN_TINY = {"patch_size": 8, "merge_size": 2, "temporal_patch_size": 2, "image_mean": [0.5, 0.5, 0.5],
             "image_std": [0.5, 0.5, 0.5], "size": {"shortest_edge": 256, "longest_edge": 16777216}}
QWEN_FULL = {"patch_size": 16, "merge_size": 2, "temporal_patch_size": 2, "image_mean": [0.5, 0.5, 0.5],
             "image_std": [0.5, 0.5, 0.5], "size": {"shortest_edge": 65536, "longest_edge": 16777216}}
# Qwen2-VL's class defaults (patch 14, CLIP mean/std, min 3136): smart_resize takes 48 to 56.
QWEN_RESIZE = {"patch_size": 14, "merge_size": 2, "temporal_patch_size": 2,
               "size": {"shortest_edge": 3136, "longest_edge": 1003520}}
GEOMETRIES = {
    "tiny": ({"image_target_size": [48, 48], "image_crop_size": [44, 44]}, [("tiny", QWEN_TINY), ("resize", QWEN_RESIZE)]),
    "full": ({"image_target_size": [256, 256], "image_crop_size": [230, 230]}, [("full", QWEN_FULL)]),
    "letterbox": ({"image_target_size": [32, 32], "image_crop_size": None, "shortest_image_edge": 32,
                   "crop_fraction": 0.8, "letter_box_transform": True}, [("letterbox", QWEN_TINY)]),
}
processors = {}
for gname, (geometry, procs) in GEOMETRIES.items():
    step = GrootN17VLMEncodeStep(**geometry)
    frames = step._build_sample_images(video, B, None)  # per sample, (timestep, view) order
    flat = [frame for sample in frames for frame in sample]
    outputs[f"vlm.{gname}"] = torch.stack([f.contiguous() for f in flat])
    for pname, pconfig in procs:
        encoded = Qwen2VLImageProcessor(**pconfig)(images=flat, return_tensors="pt")
        outputs[f"pixel_values.{pname}"] = encoded["pixel_values"]
        outputs[f"image_grid_thw.{pname}"] = encoded["image_grid_thw"]
        ip = Qwen2VLImageProcessor(**pconfig)
        processors[pname] = {"geometry": gname, "patch_size": ip.patch_size, "merge_size": ip.merge_size,
                             "temporal_patch_size": ip.temporal_patch_size, "min_pixels": ip.size["shortest_edge"],
                             "max_pixels": ip.size["longest_edge"], "image_mean": list(ip.image_mean),
                             "image_std": list(ip.image_std), "rescale_factor": ip.rescale_factor}

# -------------------------------------------------------------------------------------------- unpack
UNPACKS = {
    "plain": {"env_action_dim": 6, "stats": "action", "libero": False},
    "libero": {"env_action_dim": 7, "stats": "libero", "libero": True},
}
for uname, u in UNPACKS.items():
    ustats = {"action": {"min": inputs[f"stats.{u['stats']}.min"], "max": inputs[f"stats.{u['stats']}.max"]}}
    step = GrootActionUnpackUnnormalizeStep(env_action_dim=u["env_action_dim"], stats=ustats, normalize_min_max=True,
                                            clip_normalized_action=True, libero_gripper_action=u["libero"])
    outputs[f"unpack.{uname}"] = step({TransitionKey.ACTION: inputs["chunk"].clone()})[TransitionKey.ACTION]

case = {
    "sizes": SIZES, "infer_sizes": INFER_SIZES, "tasks": TASKS, "languages": languages,
    "infer_task": "Open the drawer.", "infer_languages": infer_languages, "vlm_languages": vlm_languages,
    "embodiment_tag": "new_embodiment", "infer_embodiment_tag": "libero_sim", "cameras": CAMERAS,
    "camera_order": sorted(CAMERAS), "geometries": {k: v[0] for k, v in GEOMETRIES.items()},
    "processors": processors, "unpacks": UNPACKS,
}
save_file({k: v.contiguous() for k, v in inputs.items()}, str(OUT / "inputs.safetensors"))
save_file({k: v.contiguous() for k, v in outputs.items()}, str(OUT / "outputs.safetensors"))
(OUT / "case.json").write_text(json.dumps(case, indent=2))
print(f"[groot_processing_oracle] wrote {len(inputs)} inputs, {len(outputs)} outputs to {OUT}")
