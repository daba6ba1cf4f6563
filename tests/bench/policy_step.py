"""Policy training-step benchmark, Python side: LeRobot 0.6.1's own ACT / Diffusion modeling code
(the interop venv, scripts/setup-interop) doing what lerobot-train's update_policy does per step:
forward (loss), backward, clip_grad_norm_(grad_clip_norm), optimizer.step(), zero_grad(), with the
policy's optimizer preset (ACT: AdamW lr 1e-5, wd 1e-4, backbone group lr 1e-5; Diffusion: Adam lr
1e-4, betas (0.95, 0.999), eps 1e-8, wd 1e-6; grad_clip_norm 10) over get_optim_params(). The twin
is policy_step.lua (lrhost, same configuration, batch and loop). Prints mean ms/step over the timed
steps after untimed warm-up steps (wall time, the fastest step, and the process CPU time of all
threads; the last two are less sensitive to other load on a shared machine), and the command line.

Configurations are reference/lerobot.md §4's: ACT 14-D state/action, one 3x480x640 camera, defaults;
Diffusion 2-D state/action, one 3x96x96 camera, 0.6.1's (= HEAD's) defaults (horizon 64, 32 action
steps, BatchNorm, one encoder per camera; still set explicitly). No pretrained backbone weights (lrhost never downloads; the step
time does not depend on the values). The batch is random and already normalized (the processors
cost the same on both sides and are not part of the step). LeRobot's default batch size is 8 per
process (TrainPipelineConfig.batch_size). --image HxW shrinks the camera on a slow machine (say so
when you report the figure); the lrhost run must use the same.

    python tests/bench/policy_step.py --policy act --threads 2 [--batch-size 8] [--image 480x640]
        [--steps 5 --warmup 2] [--device cuda --bf16 --no-tf32] [--profile trace.json]

--profile PATH runs one more step under torch.profiler and writes its Chrome trace to PATH
(tests/bench/trace_ops.py sums it per operator, as for policy_step.lua's profile=PATH).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
import _lerobot_compat  # noqa: E402,F401  (offline hub; before any lerobot import)

import torch  # noqa: E402
from lerobot.configs.types import FeatureType, PolicyFeature  # noqa: E402

REFERENCE = {
    "act": dict(state=14, action=14, image=(480, 640)),
    "diffusion": dict(state=2, action=2, image=(96, 96)),
}


def build(kind: str, state: int, action: int, image: tuple[int, int], device: str):
    inputs = {
        "observation.state": PolicyFeature(FeatureType.STATE, (state,)),
        "observation.images.top": PolicyFeature(FeatureType.VISUAL, (3, *image)),
    }
    outputs = {"action": PolicyFeature(FeatureType.ACTION, (action,))}
    if kind == "act":
        from lerobot.policies.act.configuration_act import ACTConfig
        from lerobot.policies.act.modeling_act import ACTPolicy

        cfg = ACTConfig(input_features=inputs, output_features=outputs, device=device,
                        pretrained_backbone_weights=None)
        return ACTPolicy(cfg)
    from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy

    cfg = DiffusionConfig(input_features=inputs, output_features=outputs, device=device, horizon=64,
                          n_action_steps=32, use_group_norm=False, use_separate_rgb_encoder_per_camera=True,
                          pretrained_backbone_weights=None)
    return DiffusionPolicy(cfg)


def make_batch(policy, b: int, device: str) -> dict[str, torch.Tensor]:
    cfg = policy.config
    (s,) = cfg.input_features["observation.state"].shape
    c, h, w = cfg.input_features["observation.images.top"].shape
    (a,) = cfg.output_features["action"].shape
    g = torch.Generator().manual_seed(0)
    if cfg.type == "act":
        lead, steps = (b,), cfg.chunk_size
    else:
        lead, steps = (b, cfg.n_obs_steps), cfg.horizon
    batch = {
        "observation.state": torch.randn(*lead, s, generator=g),
        "observation.images.top": torch.randn(*lead, c, h, w, generator=g),
        "action": torch.randn(b, steps, a, generator=g),
        "action_is_pad": torch.zeros(b, steps, dtype=torch.bool),
    }
    return {k: v.to(device) for k, v in batch.items()}


def make_optimizer(policy):
    """LeRobot's own preset.build(policy.get_optim_params()), as lerobot-train's make_optimizer."""
    preset = policy.config.get_optimizer_preset()
    return preset.build(policy.get_optim_params()), preset.grad_clip_norm, type(preset).__name__


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", choices=sorted(REFERENCE), required=True)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--image", help="HxW camera size (default: the reference size)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--bf16", action="store_true", help="autocast the forward to bfloat16 (GPU runs)")
    ap.add_argument("--no-tf32", action="store_true",
                    help="on CUDA, keep PyTorch's defaults instead of lerobot-train's TF32 + cudnn.benchmark")
    ap.add_argument("--profile", help="write a Chrome trace of one more step to this path")
    ap.add_argument("--ema", action="store_true",
                    help="diffusers' EMAModel.step after each optimizer step, as LeRobot main's --ema.enable=true")
    args = ap.parse_args()
    if args.device.startswith("cuda") and not args.no_tf32:
        # What lerobot-train sets on a GPU (lerobot/scripts/lerobot_train.py).
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.benchmark = True
    torch.set_num_threads(args.threads)
    ref = REFERENCE[args.policy]
    image = tuple(int(x) for x in args.image.split("x")) if args.image else ref["image"]
    torch.manual_seed(0)
    policy = build(args.policy, ref["state"], ref["action"], image, args.device).to(args.device)
    policy.train()
    batch = make_batch(policy, args.batch_size, args.device)
    opt, clip, opt_name = make_optimizer(policy)
    params = [p for p in policy.parameters() if p.requires_grad]
    cuda = args.device.startswith("cuda")
    ema = None
    if args.ema:
        from diffusers.training_utils import EMAModel

        # lerobot-train's construction (LeRobot main, EMAConfig defaults).
        ema = EMAModel(policy.parameters(), decay=0.9999, min_decay=0.0, update_after_step=0, use_ema_warmup=True,
                       inv_gamma=1.0, power=0.75)
        ema.to(args.device)

    phases = dict(forward=0.0, backward=0.0, optimizer=0.0)

    def step():
        t0 = time.perf_counter()
        with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=args.bf16):
            loss, _ = policy.forward(batch)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(params, clip, error_if_nonfinite=False)
        opt.step()
        if ema is not None:
            ema.step(policy.parameters())
        opt.zero_grad()
        t3 = time.perf_counter()
        phases["forward"] += t1 - t0
        phases["backward"] += t2 - t1
        phases["optimizer"] += t3 - t2
        return loss

    for _ in range(args.warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
    phases.update(forward=0.0, backward=0.0, optimizer=0.0)
    start, cpu_start = time.perf_counter(), time.process_time()
    fastest = float("inf")  # the least-disturbed step on a shared machine (on a GPU, read the mean)
    for _ in range(args.steps):
        t = time.perf_counter()
        loss = step()
        fastest = min(fastest, time.perf_counter() - t)
    if cuda:
        torch.cuda.synchronize()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    n_params = sum(p.numel() for p in params)
    print("$ " + " ".join(shlex.quote(x) for x in [sys.executable, *sys.argv]))
    print(f"python {args.policy} step: batch {args.batch_size}, image {image[0]}x{image[1]}, threads "
          f"{torch.get_num_threads()}, device {args.device}{' bf16' if args.bf16 else ''}{', ema' if ema else ''}"
          f"{', tf32' if args.device.startswith('cuda') and not args.no_tf32 else ''}, {n_params} params, "
          f"{opt_name}: {1000 * elapsed / args.steps:.1f} ms/step (mean of {args.steps} after {args.warmup} warm-up; "
          f"fastest {1000 * fastest:.1f}; "
          f"process CPU {1000 * cpu / args.steps:.1f} ms/step; last loss {loss.item():.4f}); "
          + ", ".join(f"{k} {1000 * v / args.steps:.1f}" for k, v in phases.items()) + " ms")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        with profile(activities=activities) as prof:
            step()
            if cuda:
                torch.cuda.synchronize()
        prof.export_chrome_trace(args.profile)
        print(f"profiler trace of one more step: {args.profile}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
