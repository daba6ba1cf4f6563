"""LeRobot's side of the policy interop tests (ACT, Diffusion): LeRobot 0.6.1's own policy classes.

Subcommands (every file is safetensors; names below are the tensor names):
  make KIND DIR [--seed S]
      LeRobot builds a small KIND policy (act | act_dropout | diffusion | diffusion_ddim; configs in
      SMALL_CONFIGS, two 3x64x64 cameras), perturbs every constant tensor (LayerNorm/BatchNorm weights, frozen
      batch-norm statistics, num_batches_tracked) so a swapped or misnamed key cannot go unnoticed,
      and writes DIR with save_pretrained + the processors of make_pre_post_processors(stats).
  inputs DIR OUT [--seed S] [--batch 3]
      A raw (unnormalized) input batch for the policy in DIR, read from its config.json:
      batch.<key> (ACT: (B, ...), Diffusion: windows (B, n_obs_steps, ...)), batch.action
      (B, chunk|horizon, A), batch.action_is_pad (one sample padded at the end) and obs1.<key>
      (the current observation only, for select_action).
  run DIR INPUTS OUT [--seed S]
      Loads DIR with LeRobot (config.json through draccus, weights with from_pretrained(strict=True)
      after an explicit key/shape/dtype check against the file, processors with
      make_pre_post_processors(pretrained_path=DIR)) and runs the PROTOCOL below.
  compare REF OTHER
      Compares two protocol outputs (REF = LeRobot's) with the tolerances in TOLERANCES; exit 1 on
      any missing tensor or mismatch.
  compare-dirs REF_DIR OTHER_DIR
      A pretrained folder re-saved by lrhost against the original: same weights (exactly), same
      config values, same processor JSON and state tensors.
  batch CMD ARGS... [SEP CMD ARGS...]
      The commands above, one after another in this process, so torch and LeRobot are imported once
      instead of once per command. SEP is ';' (run the next command anyway) or '&&' (run it only when
      every command since the last ';' succeeded), as in a shell. Every command is parsed before the
      first runs; each one's output follows a '>>> policy_oracle.py CMD ARGS' line. Exit status: the
      number of failed commands (skipped ones do not count). Every command seeds its own generators,
      so its files are the same as when it runs alone.

PROTOCOL (tests/interop/policy_driver.lua implements the same steps with lrhost):
  norm.<key>      preprocessor(batch)                          (observations and action)
  eval mode:
  chunk           reset; manual_seed(S); predict_action_chunk(norm observations)
  action_1/2      reset; manual_seed(S); postprocessor(select_action(obs1)) twice
  train mode:
  loss, part.*    manual_seed(S); forward(norm batch); loss.backward()
  grad.<param>    every parameter's gradient after that backward
  sd.<key>        every state_dict entry after the training forward (BatchNorm running stats move)

Every step calls LeRobot 0.6.1's public API unchanged: ACT's forward (l1 over the valid, unpadded
elements), Diffusion's offline predict_action_chunk on (B, n_obs_steps, ...) windows, config.json
through draccus with every field (pretrained_revision, gradient_checkpointing included). (With
0.4.4 the oracle had to rebuild these from 0.4.4's modules; see README.md "Changes for 0.6.1".)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lerobot_compat  # noqa: E402,F401  (offline hub; before any lerobot import)

import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

torch.set_num_threads(int(os.environ.get("LRHOST_ORACLE_THREADS", "1")))

# Not in alphabetical order on purpose: camera order is the order of input_features (config.json),
# it decides which encoder sees which camera (Diffusion) and the order of the conditioning vector,
# so a reader that sorts the keys must fail.
CAMERAS = ("observation.images.wrist", "observation.images.top")
STATE_DIM, ACTION_DIM, IMAGE = 6, 2, (3, 64, 64)

# Small configurations (tiny transformer / U-Net, 64x64 cameras) so one case runs in seconds; every
# other field keeps its default. pretrained_backbone_weights is None: lrhost never downloads.
SMALL_CONFIGS = {
    "act": dict(
        chunk_size=10, n_action_steps=4, dim_model=32, n_heads=4, dim_feedforward=64, n_encoder_layers=2,
        n_decoder_layers=1, n_vae_encoder_layers=2, latent_dim=8, dropout=0.0, kl_weight=10.0,
        pretrained_backbone_weights=None,
    ),
    # LeRobot's default dropout, in the training forward: every mask (attention weights, residual and
    # feed-forward dropout) must be drawn from the same generator in the same order and equal.
    "act_dropout": dict(
        chunk_size=10, n_action_steps=4, dim_model=32, n_heads=4, dim_feedforward=64, n_encoder_layers=2,
        n_decoder_layers=1, n_vae_encoder_layers=2, latent_dim=8, dropout=0.1, kl_weight=10.0,
        pretrained_backbone_weights=None,
    ),
    "diffusion": dict(
        n_obs_steps=2, horizon=16, n_action_steps=8, drop_n_last_frames=7, down_dims=(32, 64), kernel_size=3,
        n_groups=4, diffusion_step_embed_dim=16, spatial_softmax_num_keypoints=8, use_group_norm=False,
        use_separate_rgb_encoder_per_camera=True, num_inference_steps=10, pretrained_backbone_weights=None,
    ),
    # DDIM sampling, sample prediction, GroupNorm and one shared encoder (the other module tree).
    "diffusion_ddim": dict(
        n_obs_steps=2, horizon=16, n_action_steps=8, drop_n_last_frames=7, down_dims=(32, 64), kernel_size=3,
        n_groups=4, diffusion_step_embed_dim=16, spatial_softmax_num_keypoints=8, use_group_norm=True,
        use_separate_rgb_encoder_per_camera=False, noise_scheduler_type="DDIM", num_inference_steps=5,
        prediction_type="sample", pretrained_backbone_weights=None,
    ),
}

# (rtol, atol) per output group; a tensor passes when |a - b| <= atol + rtol * |b| everywhere.
# Both sides run the same ATen kernels (lrhost links the LibTorch of the same torch 2.11.0 wheel),
# single-threaded, in fp32; differences come only from how ops are composed (attention written
# out vs nn.MultiheadAttention, summation order), about 1e-6 relative per op and ~1e-5 after a few
# layers. A semantic bug (wrong key mapping, mask, position embedding, stat, random-draw order)
# changes outputs by >= 1e-2. Gradients and the 10-step diffusion sampler accumulate more
# rounding, so their tolerance is scaled by the tensor's magnitude (see compare()).
TOLERANCES = {
    "norm": (1e-6, 1e-6),
    "chunk": (1e-4, 1e-5),
    "action_1": (1e-4, 1e-5),
    "action_2": (1e-4, 1e-5),
    "loss": (1e-4, 1e-5),
    "part": (1e-4, 1e-5),
    "grad": (1e-3, 1e-4),  # atol relative to max |grad| of the tensor (see compare_tensor)
    "sd": (1e-5, 1e-6),
}
GRAD_NOISE_FLOOR = 1e-7


def log(msg: str) -> None:
    print(f"[policy_oracle] {msg}", flush=True)


# ---------------------------------------------------------------------------------------------- make
def policy_classes(kind: str):
    if kind == "act":
        from lerobot.policies.act.configuration_act import ACTConfig
        from lerobot.policies.act.modeling_act import ACTPolicy

        return ACTConfig, ACTPolicy
    from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy

    return DiffusionConfig, DiffusionPolicy


def synthetic_stats(gen: torch.Generator) -> dict[str, dict[str, torch.Tensor]]:
    """Dataset-like stats (mean/std/min/max/count + quantiles) for state, action and both cameras."""

    def vec(n: int, center: float, spread: float) -> dict[str, torch.Tensor]:
        mean = center + spread * torch.randn(n, generator=gen)
        std = 0.2 + spread * torch.rand(n, generator=gen)
        lo, hi = mean - 2 * std, mean + 2 * std
        out = {"mean": mean, "std": std, "min": lo, "max": hi, "count": torch.tensor([100.0])}
        for q in (1, 10, 50, 90, 99):
            out[f"q{q:02d}"] = lo + (hi - lo) * q / 100
        return out

    stats = {"observation.state": vec(STATE_DIM, 0.3, 0.5), "action": vec(ACTION_DIM, -0.1, 0.5)}
    for cam in CAMERAS:  # visual stats are (3,1,1), as LeRobot's compute_stats writes them
        s = vec(3, 0.45, 0.05)
        stats[cam] = {k: (v.reshape(3, 1, 1) if k != "count" else v) for k, v in s.items()}
        stats[cam]["min"] = torch.zeros(3, 1, 1)
        stats[cam]["max"] = torch.ones(3, 1, 1)
    return stats


def perturb_constants(policy: torch.nn.Module, gen: torch.Generator) -> int:
    """Gives every constant tensor (all elements equal) distinct values; returns how many changed."""
    changed = 0
    with torch.no_grad():
        for name, t in policy.state_dict(keep_vars=True).items():
            t = t.data if isinstance(t, torch.nn.Parameter) else t
            if t.numel() == 0:
                continue
            if t.dtype == torch.int64:  # num_batches_tracked
                t.fill_(int(torch.randint(3, 50, (1,), generator=gen)))
                changed += 1
                continue
            if not t.is_floating_point() or not bool((t == t.flatten()[0]).all()):
                continue
            if name.endswith("running_var"):
                t.copy_(0.5 + torch.rand(t.shape, generator=gen))
            else:
                t.add_(0.1 * torch.randn(t.shape, generator=gen))
            changed += 1
    return changed


def cmd_make(args) -> int:
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.factory import make_pre_post_processors

    base = "act" if args.kind.startswith("act") else "diffusion"
    config_cls, policy_cls = policy_classes(base)
    inputs = {"observation.state": PolicyFeature(FeatureType.STATE, (STATE_DIM,))}
    for cam in CAMERAS:
        inputs[cam] = PolicyFeature(FeatureType.VISUAL, IMAGE)
    outputs = {"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}
    cfg = config_cls(input_features=inputs, output_features=outputs, device="cpu", **SMALL_CONFIGS[args.kind])
    torch.manual_seed(args.seed)
    policy = policy_cls(cfg)
    gen = torch.Generator().manual_seed(args.seed + 1)
    n = perturb_constants(policy, gen)
    pre, post = make_pre_post_processors(cfg, dataset_stats=synthetic_stats(gen))
    out = Path(args.dir)
    if out.exists():
        shutil.rmtree(out)
    policy.save_pretrained(out)
    pre.save_pretrained(out)
    post.save_pretrained(out)
    sd = policy.state_dict()
    log(f"made {args.kind} in {out}: {len(sd)} tensors, {sum(t.numel() for t in sd.values())} elements, "
        f"{n} constant tensors perturbed; files {sorted(p.name for p in out.iterdir())}")
    return 0


# -------------------------------------------------------------------------------------------- inputs
def read_json(path: Path) -> dict:
    with open(path) as f:
        return json.load(f)


def cmd_inputs(args) -> int:
    cfg = read_json(Path(args.dir) / "config.json")
    gen = torch.Generator().manual_seed(args.seed)
    b = args.batch
    diffusion = cfg["type"] == "diffusion"
    window = cfg["n_obs_steps"] if diffusion else None
    steps = cfg["horizon"] if diffusion else cfg["chunk_size"]
    out = {}
    for key, ft in cfg["input_features"].items():
        shape = tuple(ft["shape"])
        lead = (b, window) if diffusion else (b,)
        if ft["type"] == "VISUAL":
            x = torch.rand(lead + shape, generator=gen)
        else:
            x = 0.3 + 0.8 * torch.randn(lead + shape, generator=gen)
        out[f"batch.{key}"] = x
        out[f"obs1.{key}"] = (x[:, -1] if diffusion else x).clone()
    (adim,) = cfg["output_features"]["action"]["shape"]
    out["batch.action"] = -0.1 + 0.7 * torch.randn(b, steps, adim, generator=gen)
    pad = torch.zeros(b, steps, dtype=torch.bool)
    pad[-1, steps - max(1, steps // 4):] = True  # the last sample's window runs past its episode end
    out["batch.action_is_pad"] = pad
    save_file(out, args.out, metadata={"seed": str(args.seed), "policy": cfg["type"]})
    log(f"inputs for {cfg['type']} (batch {b}): {', '.join(f'{k}{tuple(v.shape)}' for k, v in out.items())}")
    return 0


# ----------------------------------------------------------------------------------------------- run
def check_config_roundtrip(policy_cfg, original: dict) -> list[str]:
    """draccus.encode(loaded config) must give back every value of the file (modulo device null->cpu)."""
    import draccus

    encoded = {"type": policy_cfg.type, **json.loads(json.dumps(draccus.encode(policy_cfg)))}
    problems = []
    for key, value in original.items():
        if key not in encoded:
            problems.append(f"config.json key {key!r} not in LeRobot's config")
        elif encoded[key] != value and not (key == "device" and value is None):
            problems.append(f"config.json {key}: file {value!r}, LeRobot parsed {encoded[key]!r}")
    for key in encoded:
        if key not in original:
            problems.append(f"config.json lacks {key!r} (LeRobot default {encoded[key]!r} used)")
    if list(original) != list(k for k in encoded if k in original):
        problems.append(f"config.json key order differs from LeRobot's: {list(original)} vs {list(encoded)}")
    return problems


def strict_key_check(policy: torch.nn.Module, model_file: Path) -> list[str]:
    with safe_open(str(model_file), framework="pt") as f:
        file_keys = {k: (list(f.get_slice(k).get_shape()), f.get_slice(k).get_dtype()) for k in f.keys()}
    sd = policy.state_dict()
    missing = [k for k in sd if k not in file_keys]
    unexpected = [k for k in file_keys if k not in sd]
    problems = []
    if missing:
        problems.append(f"{len(missing)} keys missing in {model_file.name}: {missing[:20]}")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected keys in {model_file.name}: {unexpected[:20]}")
    dt = {"F32": torch.float32, "I64": torch.int64, "F64": torch.float64, "BF16": torch.bfloat16, "F16": torch.float16}
    for k, t in sd.items():
        if k in file_keys:
            shape, dtype = file_keys[k]
            if shape != list(t.shape) or dt.get(dtype) != t.dtype:
                problems.append(f"{k}: file {shape} {dtype}, LeRobot {list(t.shape)} {t.dtype}")
    return problems


def run_protocol(policy, pre, post, inputs: dict, seed: int) -> dict[str, torch.Tensor]:
    diffusion = policy.config.type == "diffusion"
    raw = {k.removeprefix("batch."): v for k, v in inputs.items() if k.startswith("batch.")}
    obs1_raw = {k.removeprefix("obs1."): v for k, v in inputs.items() if k.startswith("obs1.")}
    norm = pre(dict(raw))
    obs1 = pre(dict(obs1_raw))
    out = {f"norm.{k}": v for k, v in norm.items() if isinstance(v, torch.Tensor) and k != "action_is_pad"}
    obs = {k: v for k, v in norm.items() if k.startswith("observation.")}
    obs1 = {k: v for k, v in obs1.items() if k.startswith("observation.")}

    policy.eval()
    with torch.no_grad():
        policy.reset()
        torch.manual_seed(seed)
        # Diffusion: the offline mode (queues empty after reset) on (B, n_obs_steps, ...) windows.
        out["chunk"] = policy.predict_action_chunk(dict(obs))
        policy.reset()
        torch.manual_seed(seed)
        out["action_1"] = post(policy.select_action(dict(obs1)))
        out["action_2"] = post(policy.select_action(dict(obs1)))

    policy.train()
    policy.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    loss, parts = policy.forward(dict(norm))
    if not diffusion:  # ACT's l1_loss / kld_loss (Python floats of float32 tensors: exact)
        for k, v in parts.items():
            out[f"part.{k}"] = torch.tensor(v, dtype=torch.float32)
    loss.backward()
    out["loss"] = loss.detach()
    for name, p in policy.named_parameters():
        if p.grad is not None:
            out[f"grad.{name}"] = p.grad.detach().clone()
    for k, v in policy.state_dict().items():
        out[f"sd.{k}"] = v.detach().clone()
    return {k: v.contiguous() for k, v in out.items()}


def cmd_run(args) -> int:
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import make_pre_post_processors

    src = Path(args.dir)
    cfg = PreTrainedConfig.from_pretrained(src)
    problems = check_config_roundtrip(cfg, read_json(src / "config.json"))
    _, policy_cls = policy_classes(cfg.type)
    probe = policy_cls(cfg)
    problems += strict_key_check(probe, src / "model.safetensors")
    del probe
    if problems:
        for p in problems:
            log("MISMATCH " + p)
        return 1
    policy = policy_cls.from_pretrained(src, strict=True)
    pre, post = make_pre_post_processors(policy.config, pretrained_path=str(src))
    n = len(policy.state_dict())
    log(f"LeRobot {cfg.type} loaded {src} strictly ({n} tensors, every key matched); processors: "
        f"{[type(s).__name__ for s in pre.steps]} / {[type(s).__name__ for s in post.steps]}")
    inputs = load_file(args.inputs)
    out = run_protocol(policy, pre, post, inputs, args.seed)
    save_file(out, args.out, metadata={"producer": "lerobot-0.6.1", "seed": str(args.seed)})
    log(f"wrote {len(out)} tensors to {args.out}: loss {out['loss'].item():.6f}, chunk {tuple(out['chunk'].shape)}")
    return 0


# ------------------------------------------------------------------------------------------- compare
def group_of(name: str) -> str:
    return name.split(".", 1)[0]


def compare_tensor(name: str, ref: torch.Tensor, got: torch.Tensor, grad_scale: float = 0.0) -> str | None:
    if tuple(ref.shape) != tuple(got.shape):
        return f"shape {tuple(got.shape)} vs LeRobot {tuple(ref.shape)}"
    if ref.dtype != got.dtype:
        return f"dtype {got.dtype} vs LeRobot {ref.dtype}"
    if not ref.is_floating_point():
        return None if torch.equal(ref, got) else f"values differ: {got.flatten()[:6].tolist()} vs {ref.flatten()[:6].tolist()}"
    rtol, atol = TOLERANCES[group_of(name)]
    r, g = ref.double(), got.double()
    if group_of(name) == "grad":
        # Scale-aware: relative to this tensor's largest gradient, plus a floor relative to the
        # largest gradient of the whole model for tensors whose gradient is analytically ~0 (ACT's
        # decoder self-attention on its all-zero queries) and therefore pure rounding noise.
        atol = atol * r.abs().max().item() + GRAD_NOISE_FLOOR * grad_scale
    if not torch.isfinite(g).all():
        return "non-finite values"
    err = (r - g).abs()
    bound = atol + rtol * r.abs()
    if bool((err <= bound).all()):
        return None
    i = int((err - bound).argmax())
    return (f"max |diff| {err.max().item():.3g} (rtol {rtol:g}, atol {atol:.3g}); worst at flat index {i}: "
            f"lrhost {g.flatten()[i].item():.8g} vs LeRobot {r.flatten()[i].item():.8g}")


def cmd_compare(args) -> int:
    ref, got = load_file(args.ref), load_file(args.other)
    bad, worst = [], {}
    grad_scale = max((t.abs().max().item() for k, t in ref.items() if group_of(k) == "grad" and t.numel()), default=0.0)
    for name, r in ref.items():
        if name not in got:
            bad.append(f"{name}: missing in {args.other}")
            continue
        msg = compare_tensor(name, r, got[name], grad_scale)
        if msg:
            bad.append(f"{name}: {msg}")
        elif r.is_floating_point() and r.numel():
            g = group_of(name)
            d = (r.double() - got[name].double()).abs().max().item()
            rel = d / max(r.abs().max().item(), 1e-30)
            worst[g] = max(worst.get(g, (0.0, 0.0)), (d, rel))
    extra = sorted(set(got) - set(ref))
    for group, (d, rel) in sorted(worst.items()):
        n = sum(1 for k in ref if group_of(k) == group)
        log(f"{group}: {n} tensors, max |diff| {d:.3g} ({rel:.2g} of max |value|)")
    if extra:
        log(f"note: {len(extra)} outputs only in {args.other} (not compared): {extra[:8]}")
    shown = [b for b in bad if not b.startswith("grad.")][:20] + [b for b in bad if b.startswith("grad.")][:10]
    for b in shown:
        log("MISMATCH " + b)
    if len(bad) > len(shown):
        log(f"... and {len(bad) - len(shown)} more mismatching tensors")
    log(f"{'FAILED' if bad else 'OK'}: {len(ref) - len(bad)}/{len(ref)} tensors within tolerance "
        f"({args.other} vs LeRobot {args.ref})")
    return 1 if bad else 0


def cmd_compare_dirs(args) -> int:
    a, b = Path(args.ref_dir), Path(args.other_dir)
    bad = []
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    if set(wa) != set(wb):
        bad.append(f"model.safetensors keys differ: only in original {sorted(set(wa) - set(wb))[:10]}, "
                   f"only in re-saved {sorted(set(wb) - set(wa))[:10]}")
    for k in sorted(set(wa) & set(wb)):
        if wa[k].dtype != wb[k].dtype or wa[k].shape != wb[k].shape or not torch.equal(wa[k], wb[k]):
            bad.append(f"model.safetensors {k} differs")
    ca, cb = read_json(a / "config.json"), read_json(b / "config.json")
    for k, v in ca.items():
        if cb.get(k, "<absent>") != v and not (k == "device" and cb.get(k) in (None, "cpu")):
            bad.append(f"config.json {k}: original {v!r}, re-saved {cb.get(k, '<absent>')!r}")
        elif isinstance(v, dict) and list(v) != list(cb[k]):  # feature order = camera order
            bad.append(f"config.json {k}: key order changed from {list(v)} to {list(cb[k])}")
    for k in cb:
        if k not in ca:
            bad.append(f"config.json: re-saved has extra key {k!r}")
    for name in ("policy_preprocessor.json", "policy_postprocessor.json"):
        ja, jb = read_json(a / name), read_json(b / name)
        if ja != jb:
            bad.append(f"{name} differs:\n  original {json.dumps(ja)}\n  re-saved {json.dumps(jb)}")
    for p in sorted(a.glob("policy_*processor_step_*.safetensors")):
        q = b / p.name
        if not q.exists():
            bad.append(f"{p.name} missing in re-saved folder")
            continue
        ta, tb = load_file(p), load_file(q)
        if set(ta) != set(tb):
            bad.append(f"{p.name}: keys differ ({sorted(set(ta) ^ set(tb))[:6]})")
        for k in sorted(set(ta) & set(tb)):
            if torch.equal(ta[k], tb[k]):
                continue
            bad.append(f"{p.name}: {k}: original {tuple(ta[k].shape)} {ta[k].flatten()[:4].tolist()}, "
                       f"re-saved {tuple(tb[k].shape)} {tb[k].flatten()[:4].tolist()}")
    for x in bad:
        log("MISMATCH " + x)
    log(f"{'FAILED' if bad else 'OK'}: re-saved {b} vs original {a} ({len(wa)} weights)")
    return 1 if bad else 0


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("make")
    p.add_argument("kind", choices=sorted(SMALL_CONFIGS))
    p.add_argument("dir")
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
    p.add_argument("--seed", type=int, default=1234)
    p = sub.add_parser("compare")
    p.add_argument("ref")
    p.add_argument("other")
    p = sub.add_parser("compare-dirs")
    p.add_argument("ref_dir")
    p.add_argument("other_dir")
    return ap.parse_args(argv)


def run(args: argparse.Namespace) -> int:
    return {"make": cmd_make, "inputs": cmd_inputs, "run": cmd_run, "compare": cmd_compare,
            "compare-dirs": cmd_compare_dirs}[args.cmd](args)


# --------------------------------------------------------------------------------------------- batch
BATCH_SEPARATORS = (";", "&&")


def run_batch(prog: str, argv: list[str], parse, run) -> int:
    """`batch` (see the module docstring) for an oracle script with its own parse(argv) and run(args);
    smolvla_oracle.py uses it too. Returns the number of failed commands."""
    commands, sep, words = [], ";", []
    for word in argv + [";"]:
        if word not in BATCH_SEPARATORS:
            words.append(word)
            continue
        if words:  # a trailing separator ends the last command
            commands.append((sep, words, parse(words)))
        sep, words = word, []
    failed, chain_failed = 0, False
    for sep, words, args in commands:
        if sep == ";":
            chain_failed = False
        if chain_failed:
            print(f">>> {prog} {' '.join(words)} (skipped: an earlier command of its '&&' chain failed)", flush=True)
            continue
        print(f">>> {prog} {' '.join(words)}", flush=True)
        try:
            rc = run(args)
        except SystemExit as e:  # only on failure: smolvla_oracle's protocol checks exit with a message
            print(e, file=sys.stderr)
            rc = 1
        except Exception:  # as a command run alone: the traceback, then the next command (if ';')
            traceback.print_exc()
            rc = 1
        sys.stdout.flush()
        sys.stderr.flush()
        if rc:
            failed += 1
            chain_failed = True
    return failed


def main(argv: list[str]) -> int:
    if argv[:1] == ["batch"]:
        return run_batch("policy_oracle.py", argv[1:], parse, run)
    return run(parse(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
