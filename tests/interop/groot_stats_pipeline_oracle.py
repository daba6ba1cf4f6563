"""Test oracle for GR00T N1.7's checkpoint-statistics processor path through the whole policy: LeRobot 0.6.1's
make_groot_pre_post_processors on a raw base checkpoint that carries statistics.json[tag] and
processor_config.json processor_kwargs.modality_configs[tag], with groot_oracle.py's tiny model (same one
monkeypatch: the tiny Qwen3-VL config read back from OUT/hf_cache) and raw batch.

    python groot_stats_pipeline_oracle.py OUT            # OUT = a groot_oracle.py output; writes OUT/<case>/
    python groot_stats_pipeline_oracle.py OUT --reload   # LeRobot loads OUT/<case>/lrhost_policy (lrhost's folder)

Cases (embodiment_tag "libero_sim", so action_decode_transform "libero"; both checkpoints also hold a
wrong-sized "decoy" tag that must not be used; modality config: valid action horizon 6 < chunk 8, cameras
["wrist", "front"] = not alphabetical):
  stats         statistics.json has the tag: GrootN17PackInputsStep normalizes with the checkpoint's q01/q99
                (use_percentiles, clip), the postprocessor is groot_n1_7_action_decode_v1
  config_only   statistics.json has only the decoy: the dataset stats normalize and
                groot_action_unpack_unnormalize_v2 decodes, but horizon, camera order and queue steps still
                come from the modality config. LeRobot raises KeyError ("Missing 'q01' statistics for
                state.joints") when modality_configs[tag] names state/action keys without stats (checked,
                recorded in result.json), so this checkpoint's modality config names none (M_NO_KEYS); its
                video horizon is 2 (the one frame repeated: two images per camera)

Writes into OUT/<case>/:
  base/                          config.json, model.safetensors (relative symlinks to ../../base/), processor_config
                                 .json (image sizes 48/44, use_percentiles, modality_configs), statistics.json
  processed_batch.safetensors    pre(raw batch), every tensor
  inference_batch.safetensors    pre(raw batch without action / action_is_pad)
  chunk.safetensors              chunk = predict_action_chunk(processed) after manual_seed(7), chunk_post =
                                 post(chunk), step_post = post(chunk[:, 0]) (a (B, D) queue step), crafted (2,8,16)
                                 in [-1.5, 1.5] (Generator seed 5), crafted_post = post(crafted)
  result.json                    eval_loss (eval, manual_seed(123), no_grad), action_delta_indices, queue_steps,
                                 prediction_horizon, action_decode_transform, embodiment_tag, versions, postprocessor
                                 [, full_modality_config_error (config_only)]
  policy/                        policy / pre / post .save_pretrained; checked to reload bit-equal with LeRobot
--reload checks OUT/<case>/lrhost_policy against OUT/<case>/policy (both loaded by LeRobot): state dict, processed
and inference batches, eval loss, chunk, chunk_post, step_post, crafted_post. Exit 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("out")
ap.add_argument("--reload", action="store_true", help="check OUT/<case>/lrhost_policy against OUT/<case>/policy")
args = ap.parse_args()
OUT = Path(args.out).resolve()
os.environ["HF_HUB_CACHE"] = str(OUT / "hf_cache")  # before huggingface_hub / transformers are imported
os.environ["HF_HUB_OFFLINE"] = "1"
sys.path.insert(0, str(HERE))
import _lerobot_compat  # noqa: E402  (offline hub; before any lerobot import)

try:
    import tree  # noqa: E402,F401  (dm-tree: GR00TN17.prepare_input)
except ImportError:
    print("[groot_stats_pipeline_oracle] dm-tree is missing (import tree): run scripts/setup-interop", file=sys.stderr)
    sys.exit(77)

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

torch.set_num_threads(1)
transformers.logging.set_verbosity_error()  # GR00TN17's load report (the lm_head tie)
import lerobot.policies.groot.groot_n1_7 as g17  # noqa: E402
from lerobot.configs import FeatureType, PolicyFeature  # noqa: E402
from lerobot.configs.policies import PreTrainedConfig  # noqa: E402
from lerobot.policies.factory import make_pre_post_processors  # noqa: E402
from lerobot.policies.groot.configuration_groot import GrootConfig  # noqa: E402
from lerobot.policies.groot.modeling_groot import GrootPolicy  # noqa: E402
from lerobot.policies.groot.processor_groot import (  # noqa: E402
    GrootActionUnpackUnnormalizeStep, GrootN17ActionDecodeStep, make_groot_pre_post_processors)

# From groot_oracle.py (features, sizes, seeds, dataset stats); duplicated because it runs on import.
STATE_DIM, ACTION_DIM, CHUNK = 6, 6, 8
CAMERAS = {"observation.images.front": (3, 40, 56), "observation.images.wrist": (3, 40, 56)}
STATS = {"observation.state": {"min": -2.0, "max": 2.0}, "action": {"min": -3.0, "max": 3.0}}
POLICY_SEED, LOSS_SEED, CHUNK_SEED, CRAFTED_SEED = 0, 123, 7, 5
TAG = "libero_sim"
CASES = {"stats": GrootN17ActionDecodeStep, "config_only": GrootActionUnpackUnnormalizeStep}

M = {"state": {"modality_keys": ["joints", "gripper_state"], "delta_indices": [0]},
     "action": {"modality_keys": ["arm", "gripper"], "delta_indices": [0, 1, 2, 3, 4, 5],  # valid horizon 6
                # upper case as Isaac-GR00T writes its enums; LeRobot's utils.config_value lower-cases them
                "action_configs": [{"rep": "ABSOLUTE", "type": "NON_EEF", "format": "DEFAULT"}] * 2},
     "video": {"modality_keys": ["wrist", "front"], "delta_indices": [0]},
     "language": {"modality_keys": ["annotation.human.task_description"], "delta_indices": [0]}}
M2 = {"state": {"modality_keys": ["joints"], "delta_indices": [0]},  # decoy: other keys, sizes, horizon
      "action": {"modality_keys": ["arm"], "delta_indices": [0, 1, 2],
                 "action_configs": [{"rep": "ABSOLUTE", "type": "NON_EEF", "format": "DEFAULT"}]},
      "video": {"modality_keys": ["front"], "delta_indices": [0]}}
# config_only's checkpoint (see build); its video horizon is 2 frames, which LeRobot makes of the one frame
# given by repeating it (_align_video_horizon): two images per camera in the prompt.
M_NO_KEYS = {"state": {"delta_indices": [0]}, "action": {"delta_indices": M["action"]["delta_indices"]},
             "video": {**M["video"], "delta_indices": [-1, 0]}, "language": M["language"]}


def group(mn, mx, q01, q99, mean, std):
    return {"min": mn, "max": mx, "mean": mean, "std": std, "q01": q01, "q99": q99}


# q01/q99 narrow (|q| < 1.2) so the randn state / action get clipped; gripper_state[1] has equal bounds (-> 0).
S = {"state": {
        "joints": group([-2.7183, -1.9021, -3.1416, -0.5772], [2.2361, 1.6180, 0.6931, 2.4142],
                        [-0.8415, -0.4207, -1.1071, -0.3010], [0.5403, 0.9093, 0.2718, 0.7071],
                        [-0.1234, 0.2468, -0.4142, 0.1618], [0.6180, 0.4771, 0.8660, 0.3333]),
        "gripper_state": group([-0.0412, 0.0375], [0.0397, 0.0375], [-0.0318, 0.0375], [0.0291, 0.0375],
                               [-0.0011, 0.0375], [0.0163, 0.0])},
     "action": {
        "arm": group([-1.3141, -2.2718, -0.9876, -1.7321, -2.0794], [1.4142, 0.8660, 2.3026, 1.1547, 0.6931],
                     [-0.7311, -1.0986, -0.4055, -0.9163, -1.2040], [0.6931, 0.3567, 1.0986, 0.5108, 0.2231],
                     [-0.0190, -0.3711, 0.3466, -0.2027, -0.4905], [0.4142, 0.5774, 0.5236, 0.4472, 0.6325]),
        "gripper": group([0.0], [1.0], [0.02], [0.98], [0.4731], [0.4987])}}
S2 = {"state": {"joints": group([-9.5, -9.5, -9.5], [9.5, 9.5, 9.5], [-7.25] * 3, [7.25] * 3, [0.0] * 3, [3.0] * 3)},
      "action": {"arm": group([-8.5, -8.5], [8.5, 8.5], [-6.75] * 2, [6.75] * 2, [0.0] * 2, [2.5] * 2)}}


def log(msg: str) -> None:
    print(f"[groot_stats_pipeline_oracle] {msg}", flush=True)


class Fail(Exception):
    pass


def check(ok: bool, what: str) -> None:
    if not ok:
        raise Fail(what)


def make_config(base: Path) -> GrootConfig:  # groot_oracle.py's make_config + the checkpoint's tag
    return GrootConfig(
        base_model_path=str(base), embodiment_tag=TAG, chunk_size=CHUNK, n_action_steps=CHUNK, max_state_dim=16,
        max_action_dim=16, device="cpu", use_bf16=False,
        input_features={**{k: PolicyFeature(FeatureType.VISUAL, s) for k, s in CAMERAS.items()},
                        "observation.state": PolicyFeature(FeatureType.STATE, (STATE_DIM,))},
        output_features={"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))})


def dataset_stats() -> dict:  # groot_oracle.py's
    dims = {"observation.state": STATE_DIM, "action": ACTION_DIM}
    return {k: {s: v * torch.ones(dims[k]) for s, v in d.items()} for k, d in STATS.items()}


def write_base(case: str, modality: dict, stats: dict) -> Path:
    base = OUT / case / "base"
    base.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "model.safetensors"):
        (base / name).unlink(missing_ok=True)
        (base / name).symlink_to(os.path.relpath(OUT / "base" / name, base))
    kwargs = {"image_target_size": [48, 48], "image_crop_size": [44, 44], "use_percentiles": True,
              "modality_configs": {TAG: modality, "decoy": M2}}
    (base / "processor_config.json").write_text(json.dumps({"processor_kwargs": kwargs}, indent=1))
    (base / "statistics.json").write_text(json.dumps(stats, indent=1))
    return base


def build(case: str):
    """(cfg, policy, pre, post, extra result.json entries) for the case's checkpoint. config_only: LeRobot
    0.6.1 refuses M without stats (_load_n1_7_checkpoint_stats flattens every state/action key M names and
    raises KeyError, for a missing tag, {} or a missing statistics.json alike), so the dataset-stats fallback
    is only reached by a modality config naming no state/action keys: M_NO_KEYS keeps horizon, cameras, language."""
    extra = {}
    if case == "config_only":
        cfg = make_config(write_base(case, M, {"decoy": S2}))
        try:
            make_groot_pre_post_processors(cfg, dataset_stats=dataset_stats())
            raise Fail("config_only: LeRobot accepted modality_configs[tag] with state/action keys but no stats")
        except KeyError as e:
            extra["full_modality_config_error"] = f"KeyError: {e.args[0]}"
        modality, stats = M_NO_KEYS, {"decoy": S2}
    else:
        modality, stats = M, {TAG: S, "decoy": S2}
    cfg = make_config(write_base(case, modality, stats))
    torch.manual_seed(POLICY_SEED)
    policy = GrootPolicy(cfg)
    pre, post = make_groot_pre_post_processors(cfg, dataset_stats=dataset_stats())
    check(isinstance(post.steps[0], CASES[case]), f"{case}: post.steps[0] is {type(post.steps[0]).__name__}, "
          f"expected {CASES[case].__name__}")
    return cfg, policy, pre, post, extra


def load(folder: Path):
    cfg = PreTrainedConfig.from_pretrained(str(folder))
    with contextlib.redirect_stdout(io.StringIO()):  # "Loading weights from local directory"
        policy = GrootPolicy.from_pretrained(str(folder), config=cfg)
    return (policy, *make_pre_post_processors(cfg, pretrained_path=str(folder)))


def compute(policy, pre, post, raw: dict) -> dict:
    """Everything the oracle records, from one (policy, pre, post); pre mutates, so every input is cloned."""
    clone = lambda b: {k: v.clone() if isinstance(v, torch.Tensor) else list(v) for k, v in b.items()}  # noqa: E731
    r = {"processed": pre(clone(raw)),
         "inference": pre(clone({k: v for k, v in raw.items() if k not in ("action", "action_is_pad")}))}
    policy.eval()
    torch.manual_seed(LOSS_SEED)
    with torch.no_grad():
        r["eval_loss"] = policy.forward(r["processed"])[0]
    torch.manual_seed(CHUNK_SEED)
    chunk = policy.predict_action_chunk(r["processed"])  # the training batch, as groot_reload_oracle.py does
    crafted = torch.rand(2, CHUNK, 16, generator=torch.Generator().manual_seed(CRAFTED_SEED)) * 3 - 1.5
    r["chunk"] = {"chunk": chunk, "chunk_post": post(chunk.clone()), "step_post": post(chunk[:, 0].clone()),
                  "crafted": crafted, "crafted_post": post(crafted.clone())}
    return r


def diff(a: dict, b: dict) -> list[str]:
    """Names of the tensors that are not bit-equal (dtype included) between two compute() results."""
    bad = []
    for part in ("processed", "inference", "chunk"):
        x, y = ({k: v for k, v in d[part].items() if isinstance(v, torch.Tensor)} for d in (a, b))
        bad += [f"{part}.{k}" for k in sorted(x.keys() | y.keys())
                if k not in x or k not in y or x[k].dtype != y[k].dtype or not torch.equal(x[k], y[k])]
    return bad + ([] if torch.equal(a["eval_loss"], b["eval_loss"]) else ["eval_loss"])


def state_dict_diff(p1, p2) -> list[str]:
    sd1, sd2 = p1.state_dict(), p2.state_dict()
    if list(sd1) != list(sd2):
        return ["state_dict keys"]
    return [f"state_dict.{k}" for k in sd1 if sd1[k].dtype != sd2[k].dtype or not torch.equal(sd1[k], sd2[k])]


def run_case(case: str, raw: dict) -> None:
    d = OUT / case
    cfg, policy, pre, post, extra = build(case)
    r = compute(policy, pre, post, raw)
    for name, part in (("processed_batch", "processed"), ("inference_batch", "inference"), ("chunk", "chunk")):
        save_file({k: v.contiguous() for k, v in r[part].items() if isinstance(v, torch.Tensor)},
                  str(d / f"{name}.safetensors"))
    result = {"eval_loss": r["eval_loss"].item(), "action_delta_indices": list(cfg.action_delta_indices),
              "queue_steps": policy._resolve_action_queue_steps(), "prediction_horizon": r["chunk"]["chunk"].shape[1],
              "action_decode_transform": cfg.action_decode_transform, "embodiment_tag": cfg.embodiment_tag,
              "postprocessor": type(post.steps[0]).__name__, **extra,
              "seeds": {"policy": POLICY_SEED, "loss": LOSS_SEED, "chunk": CHUNK_SEED, "crafted": CRAFTED_SEED},
              "versions": _lerobot_compat.versions() | {"transformers": transformers.__version__}}
    (d / "result.json").write_text(json.dumps(result, indent=1))
    pdir = d / "policy"
    for obj in (policy, pre, post):
        obj.save_pretrained(str(pdir))
    bad = diff(r, compute(*load(pdir), raw))
    check(not bad, f"{case}: LeRobot's reload of {pdir} differs at {bad}")
    p = r["processed"]
    log(f"{case}: {result['postprocessor']}, eval_loss {result['eval_loss']:.9f}, chunk "
        f"{tuple(r['chunk']['chunk'].shape)} -> post {tuple(r['chunk']['chunk_post'].shape)}, step_post "
        f"{tuple(r['chunk']['step_post'].shape)}, queue_steps {result['queue_steps']}, action_mask rows valid "
        f"{p['action_mask'][0].any(-1).int().tolist()}; reload of policy/ bit-equal")


def reload_case(case: str, raw: dict) -> list[str] | None:
    mine, ref = OUT / case / "lrhost_policy", OUT / case / "policy"
    if not mine.is_dir():
        log(f"{case}: {mine.relative_to(OUT)} absent, skipped")
        return None
    (p1, *pp1), (p2, *pp2) = load(ref), load(mine)
    bad = [f"{case}: {b}" for b in state_dict_diff(p1, p2) + diff(compute(p1, *pp1, raw), compute(p2, *pp2, raw))]
    log(f"{case}: lrhost_policy vs policy: " + (f"{len(bad)} mismatches" if bad else
        f"{len(p1.state_dict())} state dict entries, batches, eval loss, chunk and postprocessed actions bit-equal"))
    return bad


def main() -> int:
    check((OUT / "base" / "model.safetensors").is_file(), f"{OUT} is not a groot_oracle.py output")
    snapshot = next((OUT / "hf_cache").glob("models--nvidia--Cosmos-Reason2-2B/snapshots/*"))
    tiny = json.loads((snapshot / "config.json").read_text())
    g17._cosmos_reason2_qwen3_vl_config = lambda: transformers.Qwen3VLConfig(**tiny)  # groot_oracle.py's one patch
    raw = dict(load_file(str(OUT / "raw_batch.safetensors")))
    raw["task"] = json.loads((OUT / "raw_batch.json").read_text())["task"]
    if not args.reload:
        for case in CASES:
            run_case(case, raw)
        return 0
    results = {case: reload_case(case, raw) for case in CASES}
    check(any(r is not None for r in results.values()), "no OUT/<case>/lrhost_policy to check")
    bad = [b for r in results.values() if r for b in r]
    check(not bad, "mismatches:\n  " + "\n  ".join(bad))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Fail as e:
        log(f"FAILED: {e}")
        sys.exit(1)
