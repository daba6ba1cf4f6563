"""LeRobot's side of the pi0 / pi05 interop tests: LeRobot 0.6.1's own PI0Policy / PI05Policy, built offline
at a tiny geometry (reference/pi0.md §9).

LeRobot hard-codes the full-size geometry and a gated Hub tokenizer, so three module attributes are replaced
in each of lerobot.policies.{pi0.modeling_pi0, pi05.modeling_pi05} (everything else is LeRobot's own code):
  get_gemma_config                              -> GemmaConfigs of the tiny VLM / action expert (GEOMETRY)
  PaliGemmaForConditionalGenerationWithPiGemma  -> edits the config LeRobot built (tiny SigLIP, projection
                                                   width = VLM width, vocabulary 1024), then the real class
  PiGemmaForCausalLM                            -> vocabulary 1024 (only the dead expert lm_head uses it)
The tokenizer is an offline Gemma-style BPE with byte fallback (tokenizer_gemma_interop.make_gemma) padded to
the 1024 embedding rows, stored as the Hub cache entry of "google/paligemma-3b-pt-224" (HF_HUB_CACHE, offline),
so LeRobot's unmodified TokenizerProcessorStep resolves it and policy_preprocessor.json keeps the real name.
The cache is $HF_HUB_CACHE when set, else <parent of the pretrained folder>/hf_cache (run_pi_interop.sh
exports HF_HUB_CACHE=WORK/hf_cache for both sides).

Subcommands (every tensor file is safetensors; names below are the tensor names):
  make OUT --policy pi0|pi05 [--freeze none|vision|expert] [--dtype float32|bfloat16] [--seed S] [--geometry FILE]
      The tiny policy (or the geometry of the geometry.json FILE) (POLICY_CONFIG; two cameras with non-square raw sizes so resize-with-pad runs, pi05
      with one empty camera), every parameter redrawn from a seeded generator at unit-ish gain (RMSNorm
      weights and pi05's adaRMS dense non-zero: LeRobot initialises them to 0, which would hide a missing
      (1 + w) or a swapped scale/shift/gate), dataset stats with mean/std/min/max/q01/q99, LeRobot's
      make_pi0/pi05_pre_post_processors; save_pretrained of all three into OUT (the pretrained folder),
      plus OUT/geometry.json (the geometry actually built; lrhost reads it from the folder) and the
      tokenizer's Hub cache. --freeze vision: freeze_vision_encoder; expert: train_expert_only.
  inputs DIR OUT [--seed S]
      A raw (unnormalized) batch of 2 for the policy in DIR (its config.json): batch.<key> for every input
      feature but the empty cameras (images in [-0.05, 1.05], so the clamp after the resize matters),
      batch.action (2,chunk,A), batch.action_is_pad (sample 1's last 3 steps), noise (2,chunk,max_action_dim)
      and time = [0.3, 0.85]; OUT.tasks.json holds the 2 task strings (one ending with "\\n", with an
      underscore and a character outside the tokenizer's alphabet; one long enough to be truncated).
  run DIR INPUTS OUT [--tasks FILE]
      Loads DIR as LeRobot's own scripts do (PreTrainedConfig.from_pretrained, Policy.from_pretrained(dir,
      config=...), make_pre_post_processors(cfg, pretrained_path=dir)) after explicit checks that the pi
      loader would otherwise only print: config.json round trip, model.safetensors key/shape/dtype diff,
      every loaded tensor equal to the file's. Runs the PROTOCOL below; OUT.meta.json lists the trainable
      parameters, every parameter (order, shape, dtype) and the parameters that got a gradient.
  compare REF OTHER
      Two protocol outputs (REF = LeRobot's) with TOLERANCES (fp32) / TOLERANCES_BF16 (REF of a bfloat16
      policy); the set of gradient names must be the same (freezing, and the 8 tensors that never get one).
  compare-dirs REF_DIR OTHER_DIR
      A folder re-saved by lrhost against the original: policy_oracle.py compare-dirs (weights exact,
      config.json values, processor files) and geometry.json equal.
  batch CMD ARGS... [SEP CMD ARGS...]
      The commands above in this one process; see policy_oracle.py batch.

PROTOCOL (tests/interop/pi_driver.lua implements the same steps with lrhost):
  norm.observation.state, norm.action   preprocessor(raw batch + "task" strings)
  tokens, token_mask                    observation.language.tokens / .attention_mask (int64 / bool)
  train mode:
  loss                                  policy.forward(norm batch) with model.sample_noise / sample_time
                                        shadowed to return `noise` / `time`
  grad.<param>                          every parameter's gradient after loss.backward() (names as in the
                                        state dict, e.g. model.paligemma_with_expert.gemma_expert....)
  eval mode:
  chunk                                 policy.predict_action_chunk(norm observations, noise=noise)
                                        (normalized, (B, chunk, A))
  chunk_unnorm                          postprocessor(chunk)
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import shutil
import sys
import time as timer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lerobot_compat  # noqa: E402,F401  (offline hub; before any lerobot import)

import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from oracle_common import compare_outputs, key_diff, normalizer_stats, read_json  # noqa: E402
from policy_oracle import check_config_roundtrip, cmd_compare_dirs, run_batch  # noqa: E402

torch.set_num_threads(int(os.environ.get("LRHOST_ORACLE_THREADS", "1")))

# ------------------------------------------------------------------------------------------ geometry
# geometry.json's format (all ints). vlm = the PaliGemma language model (LeRobot's "gemma_2b" variant),
# expert = the action expert ("gemma_300m"); the vision projection width is vlm.hidden_size and the image
# size is config.json's image_resolution. Heads, KV heads and head_dim must agree between vlm and expert
# (joint attention), and so must the depths (zip(strict=True)).
GEOMETRY = {
    "vlm": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8,
                num_key_value_heads=1, head_dim=16, vocab_size=1024),
    "expert": dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=8,
                   num_key_value_heads=1, head_dim=16, vocab_size=1024),
    "vision": dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, patch_size=8),
}
TOKENIZER_REPO = "google/paligemma-3b-pt-224"  # LeRobot's hard-coded name, kept in policy_preprocessor.json
TOKENIZER_MERGES = 600  # trained BPE size of the tiny tokenizer (then padded to the vocabulary size)
TOKENIZER_ALPHABET = set("abcdefghijklmnopqrstuvwxyz0123456789 \n,.;:'!?-_()TAS")

STATE_DIM, ACTION_DIM, BATCH = 5, 4, 2
# Raw camera sizes (C, H, W): not square and not 32x32, so resize_with_pad runs (24x40 -> 19x32, 6 rows of
# padding on top and 7 below; 50x36 -> 32x23, 4 columns left and 5 right). Not in alphabetical order on
# purpose: the prefix takes the cameras in input_features order.
CAMERAS = {"observation.images.wrist": (3, 24, 40), "observation.images.top": (3, 50, 36)}
POLICY_CONFIG = dict(chunk_size=10, n_action_steps=10, max_state_dim=8, max_action_dim=8, num_inference_steps=4,
                     image_resolution=(32, 32), device="cpu")
PER_POLICY = {"pi0": dict(tokenizer_max_length=16), "pi05": dict(tokenizer_max_length=48, empty_cameras=1)}
N_PADDED_STEPS = 3
TIME = [0.3, 0.85]
TASKS = [
    "grasp the yellow sponge, wipe the table twice, then put the sponge back in the bowl and move the gripper "
    "to the right of the bowl",
    "pick_up the red cube by the café\n",
]


def log(msg: str) -> None:
    print(f"[pi_oracle] {msg}", flush=True)


# ----------------------------------------------------------------------------- offline construction
_active = {"geometry": GEOMETRY}  # the geometry the patched constructors build (set_geometry)


def set_geometry(geometry: dict) -> None:
    _active["geometry"] = geometry


def _tiny_paligemma(config):
    """LeRobot's PaliGemmaConfig (full-size SigLIP, 257152 ids) edited to the active geometry."""
    from lerobot.policies.pi_gemma import PaliGemmaForConditionalGenerationWithPiGemma

    g = _active["geometry"]
    for k, v in g["vision"].items():
        setattr(config.vision_config, k, v)
    config.vision_config.projection_dim = config.text_config.hidden_size
    config.text_config.vocab_size = g["vlm"]["vocab_size"]
    config.vocab_size = g["vlm"]["vocab_size"]
    return PaliGemmaForConditionalGenerationWithPiGemma(config)


def _tiny_expert(config):
    from lerobot.policies.pi_gemma import PiGemmaForCausalLM

    config.vocab_size = _active["geometry"]["expert"]["vocab_size"]
    return PiGemmaForCausalLM(config)


def install_patches() -> None:
    """The three module-attribute replacements in both policy modules (idempotent)."""
    from lerobot.policies.pi0 import modeling_pi0
    from lerobot.policies.pi05 import modeling_pi05

    for module in (modeling_pi0, modeling_pi05):
        def tiny_gemma_config(variant: str, _config=module.GemmaConfig):
            g = _active["geometry"][{"gemma_2b": "vlm", "gemma_300m": "expert"}[variant]]
            return _config(width=g["hidden_size"], depth=g["num_hidden_layers"], mlp_dim=g["intermediate_size"],
                           num_heads=g["num_attention_heads"], num_kv_heads=g["num_key_value_heads"],
                           head_dim=g["head_dim"])

        module.get_gemma_config = tiny_gemma_config
        module.PaliGemmaForConditionalGenerationWithPiGemma = _tiny_paligemma
        module.PiGemmaForCausalLM = _tiny_expert


def built_geometry(policy) -> dict:
    """geometry.json of a built policy, read from the configs of the modules LeRobot made."""
    pwe = policy.model.paligemma_with_expert
    text, vision = pwe.paligemma.config.text_config, pwe.paligemma.config.vision_config
    expert = pwe.gemma_expert.config
    keys = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "head_dim", "vocab_size")
    geometry = {
        "vlm": {k: int(getattr(text, k)) for k in keys},
        "expert": {k: int(getattr(expert, k)) for k in keys},
        "vision": {k: int(getattr(vision, k)) for k in GEOMETRY["vision"]},
    }
    lm = pwe.paligemma.model.language_model
    assert tuple(lm.embed_tokens.weight.shape) == (geometry["vlm"]["vocab_size"], geometry["vlm"]["hidden_size"])
    assert pwe.paligemma.model.multi_modal_projector.linear.out_features == geometry["vlm"]["hidden_size"]
    assert tuple(pwe.gemma_expert.lm_head.weight.shape) == (geometry["expert"]["vocab_size"],
                                                            geometry["expert"]["hidden_size"])
    return geometry


def policy_classes(kind: str):
    if kind == "pi0":
        from lerobot.policies.pi0.configuration_pi0 import PI0Config
        from lerobot.policies.pi0.modeling_pi0 import PI0Policy
        from lerobot.policies.pi0.processor_pi0 import make_pi0_pre_post_processors
        return PI0Config, PI0Policy, make_pi0_pre_post_processors
    if kind == "pi05":
        from lerobot.policies.pi05.configuration_pi05 import PI05Config
        from lerobot.policies.pi05.modeling_pi05 import PI05Policy
        from lerobot.policies.pi05.processor_pi05 import make_pi05_pre_post_processors
        return PI05Config, PI05Policy, make_pi05_pre_post_processors
    raise ValueError(f"not a pi policy type: {kind!r}")


# ------------------------------------------------------------------------------------------ tokenizer
def hf_cache_dir(policy_dir: Path) -> Path:
    return Path(os.environ.get("HF_HUB_CACHE") or policy_dir.resolve().parent / "hf_cache")


def use_hf_cache(cache: Path) -> None:
    """Points this process's Hub cache (read by transformers at call time) at `cache`."""
    import huggingface_hub.constants

    os.environ["HF_HUB_CACHE"] = str(cache)
    huggingface_hub.constants.HF_HUB_CACHE = str(cache)


def write_tokenizer(cache: Path, vocab_size: int) -> dict:
    """The tiny Gemma tokenizer as the offline Hub cache entry of TOKENIZER_REPO:
    models--google--paligemma-3b-pt-224/{refs/main, snapshots/<rev>/{tokenizer.json, tokenizer_config.json,
    config.json}}; config.json is a default PaliGemmaConfig (AutoTokenizer reads it first)."""
    import tokenizer_gemma_interop as tg
    from transformers import PaliGemmaConfig

    repo = cache / ("models--" + TOKENIZER_REPO.replace("/", "--"))
    if repo.exists():
        shutil.rmtree(repo)
    build = repo / "build"
    prompts = [f"Task: {t.strip().replace('_', ' ')}, State: 3 128 -1 255 17;\nAction: " for t in TASKS]
    # Only strings within TOKENIZER_ALPHABET: make_gemma keeps 70 characters, and with more the trainer breaks
    # frequency ties in hash order, so the vocabulary would change from one process to the next. Characters
    # outside it (the "é" of a task) take the <0xXX> byte fallback.
    corpus = [t for t in TASKS + prompts + tg.gemma_corpus(random.Random(7)) if set(t) <= TOKENIZER_ALPHABET]
    training = corpus[:800]
    tg.make_gemma(build, training, TOKENIZER_MERGES, {"add_bos_token": True, "add_eos_token": False})
    data = json.loads((build / "tokenizer.json").read_text())
    vocab = data["model"]["vocab"]
    used = len(vocab)
    if used > vocab_size:
        raise SystemExit(f"tokenizer has {used} ids, more than the embedding's {vocab_size}")
    for i in range(used, vocab_size):  # Gemma's <unusedN> pieces: unreachable, they fill the embedding rows
        vocab[f"<unused{i - used}>"] = i
    text = json.dumps(data, ensure_ascii=False)
    rev = hashlib.sha1(text.encode()).hexdigest()
    snapshot = repo / "snapshots" / rev
    snapshot.mkdir(parents=True)
    (snapshot / "tokenizer.json").write_text(text)
    shutil.move(str(build / "tokenizer_config.json"), snapshot / "tokenizer_config.json")
    shutil.rmtree(build)
    PaliGemmaConfig().to_json_file(str(snapshot / "config.json"))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(rev)
    return {"ids": vocab_size, "trained": used, "revision": rev, "snapshot": str(snapshot)}


# ---------------------------------------------------------------------------------------------- make
def synthetic_stats(gen: torch.Generator) -> dict[str, dict[str, torch.Tensor]]:
    """Dataset-like stats for state and action: mean/std/min/max and asymmetric q01/q99 (pi05's QUANTILES)."""

    def vec(n: int, center: float, spread: float) -> dict[str, torch.Tensor]:
        mean = center + spread * torch.randn(n, generator=gen)
        std = 0.2 + spread * torch.rand(n, generator=gen)
        q01 = mean - (1.8 + 0.6 * torch.rand(n, generator=gen)) * std
        q99 = mean + (1.8 + 0.6 * torch.rand(n, generator=gen)) * std
        return {"mean": mean, "std": std, "min": mean - 3 * std, "max": mean + 3 * std, "q01": q01, "q99": q99}

    return {"observation.state": vec(STATE_DIM, 0.3, 0.5), "action": vec(ACTION_DIM, -0.1, 0.5)}


def redraw(policy: torch.nn.Module, gen: torch.Generator) -> int:
    """Every parameter from `gen`, in named_parameters order: matrices, convolutions and embeddings
    N(0, 1/fan_in) (unit gain; fan_in = the elements of one output row), LayerNorm weights 1 + 0.2 N(0, 1),
    every other vector (biases, RMSNorm weights used as 1 + w) 0.2 N(0, 1). Returns the count."""
    layer_norms = {f"{name}.weight" for name, m in policy.named_modules() if isinstance(m, torch.nn.LayerNorm)}
    n = 0
    with torch.no_grad():
        for name, p in policy.named_parameters():
            z = torch.randn(p.shape, generator=gen)
            if p.dim() >= 2:
                z = z / p[0].numel() ** 0.5
            elif name in layer_norms:
                z = 1 + 0.2 * z
            else:
                z = 0.2 * z
            p.copy_(z.to(p.dtype))
            n += 1
    return n


def cmd_make(args) -> int:
    t0 = timer.perf_counter()
    from lerobot.configs.types import FeatureType, PolicyFeature

    install_patches()
    requested = read_json(Path(args.geometry)) if args.geometry else GEOMETRY
    set_geometry(requested)
    out = Path(args.out)
    cache = hf_cache_dir(out)
    use_hf_cache(cache)
    tok = write_tokenizer(cache, requested["vlm"]["vocab_size"])
    config_cls, policy_cls, make_processors = policy_classes(args.policy)
    inputs = {"observation.state": PolicyFeature(FeatureType.STATE, (STATE_DIM,))}
    for cam, shape in CAMERAS.items():
        inputs[cam] = PolicyFeature(FeatureType.VISUAL, shape)
    outputs = {"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}
    cfg = config_cls(input_features=inputs, output_features=outputs, dtype=args.dtype,
                     freeze_vision_encoder=args.freeze == "vision", train_expert_only=args.freeze == "expert",
                     **POLICY_CONFIG, **PER_POLICY[args.policy])
    torch.manual_seed(args.seed)
    policy = policy_cls(cfg)
    gen = torch.Generator().manual_seed(args.seed + 1)
    n = redraw(policy, gen)
    pre, post = make_processors(cfg, dataset_stats=synthetic_stats(gen))
    if out.exists():
        shutil.rmtree(out)
    policy.save_pretrained(out)
    pre.save_pretrained(out)
    post.save_pretrained(out)
    geometry = built_geometry(policy)
    if geometry != requested:
        log(f"MISMATCH built geometry {geometry} is not the requested {requested}")
        return 1
    with open(out / "geometry.json", "w") as f:
        json.dump(geometry, f, indent=1)
    sd = policy.state_dict()
    saved = load_file(str(out / "model.safetensors"))
    if list(sorted(saved)) != sorted(sd) or any(not torch.equal(saved[k], v) for k, v in sd.items()):
        log("MISMATCH model.safetensors differs from the state dict")
        return 1
    trainable = sum(p.numel() for p in policy.parameters() if p.requires_grad)
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in sd.values()})
    log(f"made {args.policy} (freeze {args.freeze}, {args.dtype}) in {out}: {len(sd)} tensors, "
        f"{sum(t.numel() for t in sd.values())} parameters, {trainable} trainable, dtypes {dtypes}, {n} redrawn; "
        f"tokenizer {tok['trained']} ids padded to {tok['ids']} in {cache}; files "
        f"{sorted(p.name for p in out.iterdir())}; {timer.perf_counter() - t0:.1f}s")
    return 0


# -------------------------------------------------------------------------------------------- inputs
def cmd_inputs(args) -> int:
    cfg = read_json(Path(args.dir) / "config.json")
    gen = torch.Generator().manual_seed(args.seed)
    b, steps = BATCH, cfg["chunk_size"]
    stats = normalizer_stats(Path(args.dir))

    def state_values(key: str, shape: tuple) -> torch.Tensor:
        """Raw states whose quantile-normalized form spans about [-1.3, 1.3] (pi05's prompt bins -1 and 255
        both occur); mean/std stats alone: ~N(0, 1) after normalization."""
        if f"{key}.q01" in stats and f"{key}.q99" in stats:
            u = -0.15 + 1.3 * torch.rand(shape, generator=gen)
            u[-1, 0], u[-1, -1] = -0.1, 1.1  # in the sample with the short task (its prompt is not truncated)
            q01, q99 = stats[f"{key}.q01"], stats[f"{key}.q99"]
            return q01 + (q99 - q01) * u
        return stats[f"{key}.mean"] + stats[f"{key}.std"] * torch.randn(shape, generator=gen)

    out = {}
    for key, ft in cfg["input_features"].items():
        shape = (b,) + tuple(ft["shape"])
        if ft["type"] == "VISUAL":
            if ".empty_camera_" in key:  # added by the config; LeRobot fills it with -1 (mask False)
                continue
            out[f"batch.{key}"] = -0.05 + 1.1 * torch.rand(shape, generator=gen)
        else:
            out[f"batch.{key}"] = state_values(key, shape)
    (adim,) = cfg["output_features"]["action"]["shape"]
    z = torch.randn(b, steps, adim, generator=gen)
    out["batch.action"] = stats["action.mean"] + stats["action.std"] * z
    pad = torch.zeros(b, steps, dtype=torch.bool)
    pad[-1, steps - N_PADDED_STEPS:] = True
    out["batch.action_is_pad"] = pad
    out["noise"] = torch.randn(b, steps, cfg["max_action_dim"], generator=gen)
    out["time"] = torch.tensor(TIME, dtype=torch.float32)
    save_file(out, args.out, metadata={"seed": str(args.seed), "policy": cfg["type"]})
    with open(f"{args.out}.tasks.json", "w") as f:
        json.dump(TASKS, f, indent=1)
    log(f"inputs (batch {b}): {', '.join(f'{k}{tuple(v.shape)}' for k, v in out.items())}; tasks {TASKS}")
    return 0


# ----------------------------------------------------------------------------------------------- run
def run_protocol(policy, pre, post, inputs: dict, tasks: list[str]) -> tuple[dict, dict]:
    raw = {k.removeprefix("batch."): v.clone() for k, v in inputs.items() if k.startswith("batch.")}
    raw["task"] = list(tasks)
    norm = pre(raw)
    out = {
        "norm.observation.state": norm["observation.state"],
        "norm.action": norm["action"],
        "tokens": norm["observation.language.tokens"],
        "token_mask": norm["observation.language.attention_mask"],
    }
    noise, time = inputs["noise"], inputs["time"]

    def given_noise(shape, device):
        assert tuple(shape) == tuple(noise.shape), f"noise {tuple(shape)} asked, {tuple(noise.shape)} given"
        return noise.clone().to(device)

    def given_time(bsize, device):
        assert bsize == time.shape[0], f"time for {bsize} asked, {time.shape[0]} given"
        return time.clone().to(device)

    policy.train()
    policy.zero_grad(set_to_none=True)
    model = policy.model
    model.sample_noise, model.sample_time = given_noise, given_time  # instance attributes shadow the methods
    try:
        loss, _ = policy.forward(dict(norm))
    finally:
        del model.sample_noise, model.sample_time
    loss.backward()
    out["loss"] = loss.detach()
    problems = []
    for name, p in policy.named_parameters():
        if p.grad is not None:
            if not p.requires_grad:
                problems.append(f"frozen {name} has a gradient")
            out[f"grad.{name}"] = p.grad.detach().clone()
    if problems:
        raise SystemExit("gradient check failed:\n  " + "\n  ".join(problems[:20]))

    policy.eval()
    policy.reset()
    obs = {k: v for k, v in norm.items() if k.startswith("observation.")}
    with torch.no_grad():
        chunk = policy.predict_action_chunk(obs, noise=noise.clone())
    out["chunk"] = chunk
    out["chunk_unnorm"] = post(chunk.clone())
    meta = {
        "trainable": [n for n, p in policy.named_parameters() if p.requires_grad],
        "parameters": [[n, list(p.shape), str(p.dtype).removeprefix("torch.")] for n, p in policy.named_parameters()],
        "with_grad": [n for n, p in policy.named_parameters() if p.grad is not None],
    }
    return {k: v.detach().contiguous() for k, v in out.items()}, meta


def cmd_run(args) -> int:
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import make_pre_post_processors

    t0 = timer.perf_counter()
    src = Path(args.dir)
    install_patches()
    use_hf_cache(hf_cache_dir(src))
    # The geometry of the folder (lrhost writes it too): what the patched constructors build.
    geometry = read_json(src / "geometry.json")
    set_geometry(geometry)
    cfg = PreTrainedConfig.from_pretrained(src)
    _, policy_cls, _ = policy_classes(cfg.type)
    problems = check_config_roundtrip(cfg, read_json(src / "config.json"))
    probe = policy_cls(cfg)
    if built_geometry(probe) != geometry:
        problems.append(f"geometry.json {geometry} builds {built_geometry(probe)}")
    problems += key_diff(probe, src / "model.safetensors")
    del probe
    if problems:
        for p in problems:
            log("MISMATCH " + p)
        return 1
    # PI0Policy/PI05Policy.from_pretrained only print a failed strict load: the diff above and this
    # value check make it strict. Its banner and key report are shown only when that check fails.
    banner = io.StringIO()
    with contextlib.redirect_stdout(banner):
        policy = policy_cls.from_pretrained(src, config=cfg)
    saved = load_file(str(src / "model.safetensors"))
    sd = policy.state_dict()
    differ = [k for k, v in sd.items() if not torch.equal(v, saved[k])]
    if differ:
        print(banner.getvalue(), end="")
        log(f"MISMATCH {len(differ)} loaded tensors differ from model.safetensors: {differ[:8]}")
        return 1
    pre, post = make_pre_post_processors(policy.config, pretrained_path=str(src))
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in sd.values()})
    log(f"LeRobot {cfg.type} loaded {src} ({len(sd)} tensors, every key, shape, dtype and value matched; "
        f"dtypes {dtypes}); processors: {[type(s).__name__ for s in pre.steps]} / "
        f"{[type(s).__name__ for s in post.steps]}")
    inputs = load_file(args.inputs)
    with open(args.tasks or f"{args.inputs}.tasks.json") as f:
        tasks = json.load(f)
    out, meta = run_protocol(policy, pre, post, inputs, tasks)
    precision = "bf16" if "bfloat16" in dtypes else "fp32"
    save_file(out, args.out, metadata={"producer": "lerobot-0.6.1", "precision": precision})
    with open(f"{args.out}.meta.json", "w") as f:
        json.dump(meta, f, indent=1)
    log(f"wrote {len(out)} tensors to {args.out} ({precision}): loss {out['loss'].item():.8f}, "
        f"{len(meta['with_grad'])} of {len(meta['parameters'])} parameters with a gradient "
        f"({len(meta['trainable'])} trainable), chunk {tuple(out['chunk'].shape)}; {timer.perf_counter() - t0:.1f}s")
    return 0


# ------------------------------------------------------------------------------------------- compare
# (tol, floor[, scale_tol]) per output group, oracle_common.py's rule. fp32: both sides run the same ATen
# kernels single-threaded; reference/pi0.md §5 expects ~1e-6 on CPU, the thread-count noise floor on
# gradients is 1.2e-7 (§4.8). Gradients: 1e-4 of the tensor's own largest entry plus 1e-5 of the model's
# largest gradient (for the exactly-zero gradient of the last VLM q_proj and other ~0 tensors).
TOLERANCES = {
    "norm": (1e-6, 1.0),
    "tokens": "exact",
    "token_mask": "exact",
    "loss": (1e-5, None),
    "grad": (1e-4, 0.0, 1e-5),
    "chunk": (1e-5, 1.0),
    "chunk_unnorm": (1e-5, 1.0),
}
# bfloat16 policy (Gemma linears and embeddings bf16; §5): 8 mantissa bits and a bf16 residual stream.
TOLERANCES_BF16 = {
    "norm": (1e-6, 1.0),
    "tokens": "exact",
    "token_mask": "exact",
    "loss": (2e-2, 1.0),
    "grad": (5e-2, 0.0, 1e-6),
    "chunk": (2e-2, 1.0),
    "chunk_unnorm": (2e-2, 1.0),
}


def cmd_compare(args) -> int:
    from safetensors import safe_open

    names = []
    for path in (args.ref, args.other):
        with safe_open(path, framework="pt") as f:
            names.append({k for k in f.keys() if k.startswith("grad.")})
    only_ref, only_other = sorted(names[0] - names[1]), sorted(names[1] - names[0])
    log(f"gradients: LeRobot {len(names[0])}, other {len(names[1])}"
        + (f"; only LeRobot's: {only_ref[:8]}" if only_ref else "")
        + (f"; only the other's: {only_other[:8]}" if only_other else "")
        + ("" if only_ref or only_other else " (same names)"))
    return compare_outputs(args.ref, args.other, {"fp32": TOLERANCES, "bf16": TOLERANCES_BF16}, log,
                           meta_keys=("trainable", "parameters", "with_grad"))


def cmd_compare_pi_dirs(args) -> int:
    rc = cmd_compare_dirs(args)
    a, b = Path(args.ref_dir) / "geometry.json", Path(args.other_dir) / "geometry.json"
    if not b.exists() or read_json(a) != read_json(b):
        log(f"MISMATCH geometry.json: original {read_json(a)}, re-saved "
            f"{read_json(b) if b.exists() else '<absent>'}")
        return 1
    log("geometry.json equal")
    return rc


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("make")
    p.add_argument("out")
    p.add_argument("--policy", choices=("pi0", "pi05"), required=True)
    p.add_argument("--freeze", choices=("none", "vision", "expert"), default="none")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--geometry", help="a geometry.json to build instead of the tiny GEOMETRY")
    p = sub.add_parser("inputs")
    p.add_argument("dir")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=11)
    p = sub.add_parser("run")
    p.add_argument("dir")
    p.add_argument("inputs")
    p.add_argument("out")
    p.add_argument("--tasks", help="task JSON (default: INPUTS.tasks.json)")
    p = sub.add_parser("compare")
    p.add_argument("ref")
    p.add_argument("other")
    p = sub.add_parser("compare-dirs")
    p.add_argument("ref_dir")
    p.add_argument("other_dir")
    return ap.parse_args(argv)


def run(args: argparse.Namespace) -> int:
    return {"make": cmd_make, "inputs": cmd_inputs, "run": cmd_run, "compare": cmd_compare,
            "compare-dirs": cmd_compare_pi_dirs}[args.cmd](args)


def main(argv: list[str]) -> int:
    if argv[:1] == ["batch"]:
        return run_batch("pi_oracle.py", argv[1:], parse, run)
    return run(parse(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
