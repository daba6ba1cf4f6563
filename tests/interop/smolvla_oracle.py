"""LeRobot's side of the SmolVLA interop tests: LeRobot 0.6.1's own SmolVLAPolicy, built offline.

No Hugging Face Hub access anywhere: the SmolVLM "base model" is a local folder written by `vlm`
(a SmolVLMConfig + SmolVLMProcessor whose tokenizer is trained offline with `tokenizers`, using
SmolVLM2's exact pipeline and special-token layout; reference/smolvla.md §7.2, §8.2), and the policy
is built with load_vlm_weights=False, vlm_model_name=<that folder>.

Subcommands (every tensor file is safetensors; names below are the tensor names):
  vlm DIR [--dtype fp32|hub] [--full-size]
      Writes an offline SmolVLM folder: config.json + processor/tokenizer files, no weights. Tiny by
      default (TINY_TEXT / TINY_VISION, BPE vocabulary of ~500 trained on TASK_CORPUS); --full-size
      writes SmolVLM2-500M's geometry (FULL_TEXT / FULL_VISION, 49,152 base ids padded with fillers
      + 128 added tokens). --dtype hub adds text_config dtype bfloat16 (the hub checkpoint's dtype mix,
      reference §2); fp32 (the default) writes no dtype, so LeRobot builds everything in fp32.
  make DIR [--dtype fp32|hub] [--seed S]
      DIR/vlm (as `vlm`), then a tiny SmolVLAPolicy (POLICY_CONFIG; state [6], two 3x48x64 cameras,
      action [6]) with every constant tensor (RMSNorm/LayerNorm weights and biases, zero biases)
      perturbed so a swapped or misnamed key shows, dataset stats for state and action, and
      make_smolvla_pre_post_processors; save_pretrained of all three into DIR/policy.
  inputs DIR OUT [--seed S] [--batch 3]
      A raw (unnormalized) batch for the policy in DIR (its config.json): batch.<image key> (B,3,48,64)
      in [0,1], batch.observation.state, batch.action (B,chunk,A), batch.action_is_pad (one sample's
      last 3 steps padded), noise (B,chunk,max_action_dim) and time (B,) for the flow-matching loss
      and the sampler; OUT.tasks.json holds the B task strings (no trailing newline; one with digits,
      one longer than tokenizer_max_length tokens).
  run DIR INPUTS OUT
      Loads DIR with LeRobot (explicit key/shape/dtype diff of model.safetensors against the built
      model first, then SmolVLAPolicy.from_pretrained; processors with
      PolicyProcessorPipeline.from_pretrained) and runs the PROTOCOL below. OUT.meta.json lists the
      trainable parameters and every parameter (named_parameters order, shape, dtype).
  compare REF OTHER
      Compares two protocol outputs (REF = LeRobot's) with TOLERANCES (fp32) or TOLERANCES_BF16 (REF
      made with --dtype hub); also OUT.meta.json when both exist. Exit 1 on any mismatch.
  keys DIR OUT.json
      Builds the full-size SmolVLAPolicy from the `vlm --full-size` folder DIR (random init, no
      weights) and writes its state_dict table [key, shape, dtype] in order, the trainable names, the
      named_parameters order and the parameter counts (reference §2: 500 tensors, 450,046,176
      parameters, 99,880,992 trainable).
  compare-keys REF OTHER
      Two `keys` tables (REF = LeRobot's): same state_dict, parameter order, trainable set and counts.
  compare-dirs REF_DIR OTHER_DIR
      policy_oracle.py compare-dirs (a folder re-saved by lrhost against the original), here so that
      it can run in a batch.
  batch CMD ARGS... [SEP CMD ARGS...]
      The commands above in this one process (torch, transformers and LeRobot imported once); SEP is
      ';' or '&&' as in a shell. See policy_oracle.py batch.

PROTOCOL (tests/interop/smolvla_driver.lua implements the same steps with lrhost):
  norm.observation.state, norm.action   preprocessor(raw batch + "task" strings)
  tokens, token_mask                    observation.language.tokens / .attention_mask (int64 / bool)
  train mode:
  loss                                  policy.forward(norm batch, noise=noise, time=time)[0]
  grad.<param>                          every parameter's gradient after loss.backward()
  eval mode:
  chunk                                 policy.predict_action_chunk(norm observations, noise=noise)
                                        (normalized, (B, chunk, A))
  chunk_unnorm                          postprocessor(chunk)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time as timer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lerobot_compat  # noqa: E402,F401  (offline hub; before any lerobot import)

import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from oracle_common import compare_outputs, key_diff, normalizer_stats, read_json  # noqa: E402
from policy_oracle import check_config_roundtrip, cmd_compare_dirs, run_batch  # noqa: E402

torch.set_num_threads(int(os.environ.get("LRHOST_ORACLE_THREADS", "1")))

# ------------------------------------------------------------------------------------------ geometry
# SmolLM's 17 special tokens (ids 0..16) and SmolVLM2's 128 added tokens (ids right after the base
# vocabulary, in this order; reference/smolvla.md §7.2). Same lists as tokenizer_interop.py.
SMOLLM_SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>", "<file_sep>", "<filename>",
    "<gh_stars>", "<issue_start>", "<issue_comment>", "<issue_closed>", "<jupyter_start>", "<jupyter_text>",
    "<jupyter_code>", "<jupyter_output>", "<jupyter_script>", "<empty_output>",
]
SMOLVLM_ADDED = (["<global-img>"] + [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]
                 + ["<fake_token_around_image>", "<image>"]
                 + [f"<|reserved_special_token_{i}|>" for i in range(88)] + ["<end_of_utterance>"])
FULL_BASE_VOCAB = 49152  # SmolLM2's base vocabulary (+128 added = 49,280)
TINY_BPE_VOCAB = 500     # trained size of the tiny tokenizer's base vocabulary (17 specials + 256 bytes + merges)

TINY_TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, max_position_embeddings=2048)
TINY_VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                   image_size=64, patch_size=16)
TINY_SCALE_FACTOR = 2
# SmolVLM2-500M-Video-Instruct (reference §1, §8.2 step 3).
FULL_TEXT = dict(hidden_size=960, intermediate_size=2560, num_hidden_layers=32, num_attention_heads=15,
                 num_key_value_heads=5, head_dim=64, max_position_embeddings=8192)
FULL_VISION = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                   image_size=512, patch_size=16)
FULL_SCALE_FACTOR = 4

# Training text of the tiny tokenizer: the tasks of lrhost's built-in dataset
# (host/data/synthetic_push.cpp) and general robot phrases, with digits, punctuation and apostrophes
# so every pre-tokenizer rule has matches. TASKS[1:] are not in it, so they also split into
# sub-word pieces. Changing this list changes recipes/assets/smolvla_tiny_vlm (regenerate it).
TASK_CORPUS = [
    "push the blue block onto the green target on the left",
    "push the blue block onto the green target on the right",
    "push the T block to the goal",
    "push the T-shaped block into the target area",
    "pick up the red cube and put it in the box",
    "pick up 3 red cubes and stack them 12 cm high",
    "place the cup on the plate, then move the arm back to 0",
    "grasp the yellow sponge and wipe the table",
    "open the drawer and put the pen inside",
    "close the drawer",
    "insert the peg into the hole",
    "move the gripper to the left of the bowl",
    "move the gripper to the right of the bowl",
    "rotate the handle 90 degrees clockwise",
    "transfer the cube from the left arm to the right arm",
    "fold the towel in half",
    "pour the water into the glass",
    "stack the 2 green blocks on top of the 1 blue block",
    "sort the objects by color: red, green, blue",
    "it's 3.5cm to the target; don't touch the wall",
    "go to position 1, then 2, then 3",
    "the robot arm has 6 joints and a gripper",
    "what action should the robot take to reach the goal?",
    "slide the block 10 cm forward and 5 cm to the left",
    "lift the box with both hands and set it down gently",
    "turn on the light switch",
    "press the red button, then the green one",
    "hand the screwdriver to the person",
    "reach for the orange ball and throw it into the basket",
    "wait until the conveyor stops, then remove the part",
    "put all the toys back in the bin",
    "Push the block. Pick the cube! Place it here?",
]
# Interop batch tasks: one with digits, one longer than tokenizer_max_length tokens (truncation).
TASKS = [
    "push the blue block onto the green target on the left",
    "stack 3 red cubes 12 cm high",
    "grasp the yellow sponge, wipe the table twice, then put the sponge back in the bowl and move "
    "the gripper to the right of the bowl",
]

# The tiny policy (reference §1 field names). Every other field keeps LeRobot's default.
POLICY_CONFIG = dict(
    load_vlm_weights=False, pad_language_to="max_length", tokenizer_max_length=16, chunk_size=10,
    n_action_steps=10, resize_imgs_with_padding=(64, 64), num_vlm_layers=4,
)
STATE_DIM, ACTION_DIM, IMAGE = 6, 6, (3, 48, 64)
# Not in alphabetical order on purpose: the camera order of the prefix is the key order of
# input_features (config.json); a reader that sorts the keys must fail.
CAMERAS = ("observation.images.wrist", "observation.images.top")
N_PADDED_STEPS = 3  # the last sample's last steps are past its episode end (action_is_pad)


def log(msg: str) -> None:
    print(f"[smolvla_oracle] {msg}", flush=True)


# ----------------------------------------------------------------------------------------------- vlm
def train_tokenizer(corpus: list[str], vocab_size: int, pad_to: int | None):
    """SmolVLM2's tokenizer layout, trained offline: byte-level BPE with the pre-tokenizer
    Sequence[Digits(individual_digits), ByteLevel(add_prefix_space=False)], the 17 SmolLM specials
    at ids 0..16, optional filler tokens up to pad_to, then the 128 added tokens in id order."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SMOLLM_SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    if pad_to is not None:  # SmolLM's base vocabulary: fill up with unreachable tokens
        data = json.loads(tok.to_str())
        vocab = data["model"]["vocab"]
        for i in range(len(vocab), pad_to):
            vocab[f"<filler_{i}>"] = i
        tok = Tokenizer.from_str(json.dumps(data))
    base = tok.get_vocab_size(with_added_tokens=True)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SMOLVLM_ADDED])
    assert [tok.token_to_id(t) for t in SMOLLM_SPECIALS] == list(range(17))
    assert [tok.token_to_id(t) for t in SMOLVLM_ADDED] == list(range(base, base + len(SMOLVLM_ADDED)))
    return tok, base


def write_vlm(folder: Path, dtype: str = "fp32", full_size: bool = False, corpus: list[str] | None = None) -> dict:
    """An offline SmolVLM folder (reference §8.2): config.json + processor and tokenizer files."""
    from transformers import PreTrainedTokenizerFast, SmolVLMConfig, SmolVLMImageProcessor, SmolVLMProcessor
    from transformers.models.smolvlm.video_processing_smolvlm import SmolVLMVideoProcessor

    text, vision, scale = (FULL_TEXT, FULL_VISION, FULL_SCALE_FACTOR) if full_size else (
        TINY_TEXT, TINY_VISION, TINY_SCALE_FACTOR)
    corpus = list(corpus or TASK_CORPUS)
    tok, base = train_tokenizer(corpus, TINY_BPE_VOCAB, FULL_BASE_VOCAB if full_size else None)
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|im_start|>", eos_token="<end_of_utterance>", pad_token="<|im_end|>",
        unk_token="<|endoftext|>",
        # SmolVLM2's tokenizer_config.json (third-party copy, reference §7.1): a task longer than
        # tokenizer_max_length loses its beginning. LeRobot passes padding_side="right" itself.
        truncation_side="left",
        extra_special_tokens={"fake_image_token": "<fake_token_around_image>", "image_token": "<image>",
                              "global_image_token": "<global-img>", "end_of_utterance_token": "<end_of_utterance>"})
    image_seq_len = (vision["image_size"] // vision["patch_size"]) ** 2 // scale ** 2
    processor = SmolVLMProcessor(
        image_processor=SmolVLMImageProcessor(max_image_size={"longest_edge": vision["image_size"]},
                                              size={"longest_edge": 4 * vision["image_size"]},
                                              image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5]),
        tokenizer=fast, video_processor=SmolVLMVideoProcessor(), image_seq_len=image_seq_len)
    text_config = dict(model_type="llama", vocab_size=vocab_size, rms_norm_eps=1e-5,
                       rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
                       pad_token_id=tok.token_to_id("<|im_end|>"), **text)
    if dtype == "hub":  # the hub checkpoint's text_config dtype: LeRobot then builds the text model in bf16
        text_config["dtype"] = "bfloat16"
    config = SmolVLMConfig(text_config=text_config, vision_config=dict(vision), scale_factor=scale,
                           image_token_id=tok.token_to_id("<image>"), vocab_size=vocab_size,
                           tie_word_embeddings=False)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.iterdir():  # a rewrite keeps only a README.md (recipes/assets/smolvla_tiny_vlm)
        if stale.name != "README.md":
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    config.save_pretrained(folder)
    processor.save_pretrained(folder)
    return dict(vocab_size=vocab_size, base_vocab=base, image_seq_len=image_seq_len)


def cmd_vlm(args) -> int:
    t0 = timer.perf_counter()
    folder = Path(args.dir)
    info = write_vlm(folder, args.dtype, args.full_size)
    files = sorted(p.name for p in folder.iterdir())
    size = sum(p.stat().st_size for p in folder.iterdir())
    log(f"wrote {'full-size' if args.full_size else 'tiny'} SmolVLM folder {folder} (dtype {args.dtype}): "
        f"{info}, {len(files)} files {files}, {size / 1024:.0f} KiB, {timer.perf_counter() - t0:.1f}s")
    return 0


# ---------------------------------------------------------------------------------------------- make
def synthetic_stats(gen: torch.Generator) -> dict[str, dict[str, torch.Tensor]]:
    """Dataset-like stats (mean/std/min/max) for state and action; images are IDENTITY (no stats)."""

    def vec(n: int, center: float, spread: float) -> dict[str, torch.Tensor]:
        mean = center + spread * torch.randn(n, generator=gen)
        std = 0.2 + spread * torch.rand(n, generator=gen)
        return {"mean": mean, "std": std, "min": mean - 2 * std, "max": mean + 2 * std}

    return {"observation.state": vec(STATE_DIM, 0.3, 0.5), "action": vec(ACTION_DIM, -0.1, 0.5)}


def perturb_constants(policy: torch.nn.Module, gen: torch.Generator) -> int:
    """Gives every constant tensor (RMSNorm/LayerNorm weights and biases, zero-initialised biases)
    distinct random values, so a swapped or misnamed key changes the outputs; returns the count."""
    changed = 0
    with torch.no_grad():
        for _, p in policy.named_parameters():
            t = p.data
            if t.numel() > 1 and bool((t == t.flatten()[0]).all()):
                t.add_((0.1 * torch.randn(t.shape, generator=gen)).to(t.dtype))
                changed += 1
    return changed


def build_policy(vlm_dir: Path, **overrides):
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

    inputs = {"observation.state": PolicyFeature(FeatureType.STATE, (STATE_DIM,))}
    for cam in CAMERAS:
        inputs[cam] = PolicyFeature(FeatureType.VISUAL, IMAGE)
    outputs = {"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}
    fields = {**POLICY_CONFIG, **overrides}
    cfg = SmolVLAConfig(input_features=inputs, output_features=outputs, device="cpu",
                        vlm_model_name=str(vlm_dir.resolve()), **fields)
    return cfg, SmolVLAPolicy(cfg)


def cmd_make(args) -> int:
    from lerobot.policies.smolvla.processor_smolvla import make_smolvla_pre_post_processors

    t0 = timer.perf_counter()
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    write_vlm(root / "vlm", args.dtype)
    torch.manual_seed(args.seed)
    cfg, policy = build_policy(root / "vlm")
    gen = torch.Generator().manual_seed(args.seed + 1)
    n = perturb_constants(policy, gen)
    pre, post = make_smolvla_pre_post_processors(cfg, dataset_stats=synthetic_stats(gen))
    out = root / "policy"
    if out.exists():
        shutil.rmtree(out)
    policy.save_pretrained(out)
    pre.save_pretrained(out)
    post.save_pretrained(out)
    sd = policy.state_dict()
    with safe_open(str(out / "model.safetensors"), framework="pt") as f:
        saved = list(f.keys())
    expected_names = {k for k in sd if k.startswith("model.vlm_with_expert.vlm.model.") or
                      k.startswith("model.vlm_with_expert.lm_expert.layers.")}
    problems = [k for k in sd if k not in saved]
    if problems or "model.vlm_with_expert.vlm.lm_head.weight" not in saved or not expected_names:
        log(f"MISMATCH saved state dict: missing {problems[:10]}")
        return 1
    dtypes = sorted({str(t.dtype) for t in sd.values()})
    log(f"made SmolVLA in {out}: {len(saved)} tensors saved (state_dict {len(sd)}; 500-style naming, "
        f"lm_head included), {sum(t.numel() for t in sd.values())} parameters, "
        f"{sum(p.numel() for p in policy.parameters() if p.requires_grad)} trainable, dtypes {dtypes}, "
        f"{n} constant tensors perturbed; files {sorted(p.name for p in out.iterdir())}; "
        f"{timer.perf_counter() - t0:.1f}s")
    return 0


# -------------------------------------------------------------------------------------------- inputs
def cmd_inputs(args) -> int:
    cfg = read_json(Path(args.dir) / "config.json")
    gen = torch.Generator().manual_seed(args.seed)
    b, steps = args.batch, cfg["chunk_size"]
    stats = normalizer_stats(Path(args.dir))

    def around_stats(key: str, shape: tuple) -> torch.Tensor:
        """Raw values whose normalized form is ~N(0, 1) (so the loss and actions are O(1))."""
        z = torch.randn(shape, generator=gen)
        if f"{key}.mean" in stats and f"{key}.std" in stats:
            return stats[f"{key}.mean"] + stats[f"{key}.std"] * z
        return 0.3 + 0.8 * z

    out = {}
    for key, ft in cfg["input_features"].items():
        shape = tuple(ft["shape"])
        if ft["type"] == "VISUAL":
            out[f"batch.{key}"] = torch.rand((b,) + shape, generator=gen)
        else:
            out[f"batch.{key}"] = around_stats(key, (b,) + shape)
    (adim,) = cfg["output_features"]["action"]["shape"]
    out["batch.action"] = around_stats("action", (b, steps, adim))
    pad = torch.zeros(b, steps, dtype=torch.bool)
    pad[-1, steps - N_PADDED_STEPS:] = True  # the last sample's chunk runs past its episode end
    out["batch.action_is_pad"] = pad
    out["noise"] = torch.randn(b, steps, cfg["max_action_dim"], generator=gen)
    out["time"] = 0.05 + 0.9 * torch.rand(b, generator=gen)
    save_file(out, args.out, metadata={"seed": str(args.seed), "policy": cfg["type"]})
    tasks = [TASKS[i % len(TASKS)] for i in range(b)]
    with open(f"{args.out}.tasks.json", "w") as f:
        json.dump(tasks, f, indent=1)
    log(f"inputs (batch {b}): {', '.join(f'{k}{tuple(v.shape)}' for k, v in out.items())}; tasks {tasks}")
    return 0


# ----------------------------------------------------------------------------------------------- run
def run_protocol(policy, pre, post, inputs: dict, tasks: list[str], every_trainable_used: bool = True) -> tuple[dict, dict]:
    """every_trainable_used=False: a trainable parameter without a gradient is no error (LoRA adapters on
    the last VLM layer's q_proj, which no output reads: lora_oracle.py)."""
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

    # Training forward/backward (the whole VLM frozen by default: vision, connector, text, lm_head).
    policy.train()
    policy.zero_grad(set_to_none=True)
    loss, _ = policy.forward(dict(norm), noise=noise.clone(), time=time.clone())
    loss.backward()
    out["loss"] = loss.detach()
    problems = []
    for name, p in policy.named_parameters():
        if p.grad is not None:
            if not p.requires_grad:
                problems.append(f"frozen {name} has a gradient")
            out[f"grad.{name}"] = p.grad.detach().clone()
        elif p.requires_grad and every_trainable_used:
            problems.append(f"trainable {name} got no gradient")
        if name.startswith("model.vlm_with_expert.vlm.") and p.requires_grad and policy.config.train_expert_only:
            problems.append(f"{name} is trainable although train_expert_only")
    if problems:
        raise SystemExit("gradient check failed:\n  " + "\n  ".join(problems[:20]))

    # Sampling with the given noise (10 Euler steps with the prefix KV cache).
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
    }
    return {k: v.detach().contiguous() for k, v in out.items()}, meta


def cmd_run(args) -> int:
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import make_pre_post_processors
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

    t0 = timer.perf_counter()
    src = Path(args.dir)
    cfg = PreTrainedConfig.from_pretrained(src)
    problems = check_config_roundtrip(cfg, read_json(src / "config.json"))
    probe = SmolVLAPolicy(cfg)
    # lm_head: never used by SmolVLA, but a parameter of the untied SmolVLMForConditionalGeneration, so
    # LeRobot saves and loads it like any other key; a writer that drops it fails this diff.
    problems += key_diff(probe, src / "model.safetensors")
    del probe
    if problems:
        for p in problems:
            log("MISMATCH " + p)
        return 1
    policy = SmolVLAPolicy.from_pretrained(src, strict=True)
    pre, post = make_pre_post_processors(policy.config, pretrained_path=str(src))
    sd = policy.state_dict()
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in sd.values()})
    log(f"LeRobot SmolVLA loaded {src} strictly ({len(sd)} tensors, every key, shape and dtype matched; "
        f"dtypes {dtypes}); processors: {[type(s).__name__ for s in pre.steps]} / "
        f"{[type(s).__name__ for s in post.steps]}")
    inputs = load_file(args.inputs)
    with open(f"{args.inputs}.tasks.json") if not args.tasks else open(args.tasks) as f:
        tasks = json.load(f)
    out, meta = run_protocol(policy, pre, post, inputs, tasks)
    precision = "bf16" if "bfloat16" in dtypes else "fp32"
    save_file(out, args.out, metadata={"producer": "lerobot-0.6.1", "precision": precision})
    with open(f"{args.out}.meta.json", "w") as f:
        json.dump(meta, f, indent=1)
    log(f"wrote {len(out)} tensors to {args.out} ({precision}): loss {out['loss'].item():.6f}, "
        f"{sum(1 for k in out if k.startswith('grad.'))} gradients, chunk {tuple(out['chunk'].shape)}; "
        f"{timer.perf_counter() - t0:.1f}s")
    return 0


# ------------------------------------------------------------------------------------------- compare
# Per output group: (tol, floor[, scale_tol]) as in oracle_common.py: a tensor passes when
# max|other - ref| <= tol * max(floor, max|ref|) (+ scale_tol * the model's largest gradient; floor None:
# tol is absolute). "exact": same integer values (bool and uint8 masks compare equal).
# fp32 (the default oracle, config without dtype): both sides run the same ATen kernels (lrhost links
# the LibTorch of the same torch 2.11 wheel), single-threaded; differences come only from how ops
# are composed (~1e-6 relative per op, ~1e-5 after the layer stack and 10 Euler steps). A semantic
# bug (key mapping, RoPE base, mask, pixel shuffle, padding side, loss normalisation) moves outputs by
# >= 1e-2.
TOLERANCES = {
    "norm": (1e-6, 1.0),
    "tokens": "exact",
    "token_mask": "exact",
    "loss": (1e-5, None),
    "grad": (1e-4, 1.0),
    "chunk": (1e-4, 1.0),
    "chunk_unnorm": (1e-4, 1.0),
}
# bf16 (REF made with `--dtype hub`: text model and expert in bf16, vision/connector/lm_head/cross k,v
# and heads fp32, reference §2): bf16 keeps 8 mantissa bits (4e-3 relative per rounding) and the
# residual stream is bf16 after the first o_proj, so differences in op composition are amplified:
# 2e-2 relative for loss and actions, gradients 5e-2 of the tensor's largest entry.
TOLERANCES_BF16 = {
    "norm": (1e-6, 1.0),
    "tokens": "exact",
    "token_mask": "exact",
    "loss": (2e-2, 1.0),
    "grad": (5e-2, 0.0, 1e-6),  # + 1e-6 of the model's largest gradient (analytically ~0 tensors)
    "chunk": (2e-2, 1.0),
    "chunk_unnorm": (2e-2, 1.0),
}
def cmd_compare(args) -> int:
    return compare_outputs(args.ref, args.other, {"fp32": TOLERANCES, "bf16": TOLERANCES_BF16}, log)


# ---------------------------------------------------------------------------------------------- keys
def cmd_keys(args) -> int:
    """The full-size state_dict table. LeRobot never changes torch's default dtype (fp32); the
    per-module dtypes come from the VLM folder's config (reference §2)."""
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

    t0 = timer.perf_counter()
    assert torch.get_default_dtype() == torch.float32
    inputs = {"observation.state": PolicyFeature(FeatureType.STATE, (STATE_DIM,))}
    for i in (1, 2, 3):  # smolvla_base's three cameras; no key depends on them
        inputs[f"observation.images.camera{i}"] = PolicyFeature(FeatureType.VISUAL, (3, 256, 256))
    outputs = {"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}
    cfg = SmolVLAConfig(input_features=inputs, output_features=outputs, device="cpu",
                        vlm_model_name=str(Path(args.dir).resolve()), load_vlm_weights=False,
                        pad_language_to="max_length")
    policy = SmolVLAPolicy(cfg)
    built = timer.perf_counter() - t0
    sd = policy.state_dict()

    def dt(t):
        return str(t.dtype).removeprefix("torch.")

    params = list(policy.named_parameters())
    by_dtype = {}
    for _, p in params:
        by_dtype[dt(p)] = by_dtype.get(dt(p), 0) + p.numel()
    table = {
        "vlm_dir": str(Path(args.dir).resolve()),
        "state_dict": [[k, list(t.shape), dt(t)] for k, t in sd.items()],
        "trainable": [n for n, p in params if p.requires_grad],
        "parameters": [[n, list(p.shape), dt(p)] for n, p in params],
        "counts": {
            "tensors": len(sd),
            "parameters": sum(p.numel() for _, p in params),
            "trainable": sum(p.numel() for _, p in params if p.requires_grad),
            "state_dict_elements": sum(t.numel() for t in sd.values()),
            "parameters_by_dtype": by_dtype,
        },
    }
    with open(args.out, "w") as f:
        json.dump(table, f, indent=1)
    c = table["counts"]
    log(f"full-size SmolVLA from {args.dir}: {c['tensors']} tensors, {c['parameters']:,} parameters, "
        f"{c['trainable']:,} trainable, by dtype {by_dtype}; built in {built:.1f}s, "
        f"total {timer.perf_counter() - t0:.1f}s -> {args.out}")
    return 0


def cmd_compare_keys(args) -> int:
    """keys tables of LeRobot (REF) and lrhost (OTHER): same state_dict order/shapes/dtypes,
    parameter order, trainable set and counts."""
    a, b = read_json(Path(args.ref)), read_json(Path(args.other))
    bad = []
    for key in ("state_dict", "parameters", "trainable"):
        la, lb = a.get(key), b.get(key)
        if lb is None:
            bad.append(f"{key}: absent in {args.other}")
            continue
        if la != lb:
            first = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
            bad.append(f"{key}: {len(lb)} entries vs LeRobot {len(la)}; first difference at #{first}: "
                       f"lrhost {lb[first] if first < len(lb) else '<end>'} vs LeRobot "
                       f"{la[first] if first < len(la) else '<end>'}")
            only_a = sorted({json.dumps(x) for x in la} - {json.dumps(x) for x in lb})[:5]
            only_b = sorted({json.dumps(x) for x in lb} - {json.dumps(x) for x in la})[:5]
            if only_a or only_b:
                bad.append(f"{key}: only in LeRobot {only_a}; only in lrhost {only_b}")
    for key in ("tensors", "parameters", "trainable"):
        if a["counts"][key] != b.get("counts", {}).get(key):
            bad.append(f"counts.{key}: lrhost {b.get('counts', {}).get(key)} vs LeRobot {a['counts'][key]}")
    for x in bad:
        log("MISMATCH " + x)
    c = a["counts"]
    log(f"{'FAILED' if bad else 'OK'}: keys table ({c['tensors']} tensors, {c['parameters']:,} parameters, "
        f"{c['trainable']:,} trainable) {args.other} vs LeRobot {args.ref}")
    return 1 if bad else 0


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("vlm")
    p.add_argument("dir")
    p.add_argument("--dtype", choices=("fp32", "hub"), default="fp32")
    p.add_argument("--full-size", action="store_true")
    p = sub.add_parser("make")
    p.add_argument("dir")
    p.add_argument("--dtype", choices=("fp32", "hub"), default="fp32")
    p.add_argument("--seed", type=int, default=7)
    p = sub.add_parser("inputs")
    p.add_argument("dir")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--batch", type=int, default=3)
    p = sub.add_parser("run")
    p.add_argument("dir")
    p.add_argument("inputs")
    p.add_argument("out")
    p.add_argument("--tasks", help="task JSON (default: INPUTS.tasks.json)")
    p = sub.add_parser("compare")
    p.add_argument("ref")
    p.add_argument("other")
    p = sub.add_parser("keys")
    p.add_argument("dir")
    p.add_argument("out")
    p = sub.add_parser("compare-keys")
    p.add_argument("ref")
    p.add_argument("other")
    p = sub.add_parser("compare-dirs")
    p.add_argument("ref_dir")
    p.add_argument("other_dir")
    return ap.parse_args(argv)


def run(args: argparse.Namespace) -> int:
    return {"vlm": cmd_vlm, "make": cmd_make, "inputs": cmd_inputs, "run": cmd_run, "compare": cmd_compare,
            "keys": cmd_keys, "compare-keys": cmd_compare_keys, "compare-dirs": cmd_compare_dirs}[args.cmd](args)


def main(argv: list[str]) -> int:
    if argv[:1] == ["batch"]:
        return run_batch("smolvla_oracle.py", argv[1:], parse, run)
    return run(parse(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
