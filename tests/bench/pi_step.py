"""pi0 / pi05 training-step benchmark, Python side: LeRobot 0.6.1's own PI0Policy / PI05Policy (the interop
venv, scripts/setup-interop), built offline at the geometry of a geometry.json (--geometry; format in
host/policy/pi/pi_geometry.hpp) with tests/interop/pi_oracle.py's module patches (install_patches,
set_geometry: everything else is LeRobot's code), random weights, fp32, no autocast.
Features: observation.state [6], one camera observation.images.top [3, R, R] at the config's
image_resolution R (so no resize runs), action [6]; chunk --chunk, tokenizer_max_length --tokens.
A random already-preprocessed batch of --batch-size (camera in [0, 1], tokens with an all-true bool mask,
normalized state and action) and a fixed noise (B, chunk, max_action_dim) and time (B,) (the model's
sample_noise / sample_time shadowed to return them, as pi_oracle.py's protocol does). Per step what
lerobot-train's update_policy does: forward (loss), backward, clip_grad_norm_(grad_clip_norm = 1),
AdamW step (the policy's preset: lr 2.5e-5, betas (0.9, 0.95), eps 1e-8, wd 0.01), zero_grad.
Prints the median step time in seconds of --steps timed steps after --warmup (and the fastest, the mean,
the process CPU time per step), then the median of each phase. Threads: --threads, else LRHOST_BENCH_THREADS, else 2.
Its twin is pi_step.lua (lrhost, same geometry, config, batch and loop); scripts/bench pi runs both.

    python tests/bench/pi_step.py --policy pi05 --geometry FILE [--image 224] [--batch-size 1] [--chunk 50]
        [--tokens 48] [--steps 3] [--warmup 1] [--threads N] [--profile trace.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
import pi_oracle  # noqa: E402  (imports _lerobot_compat: offline hub; sets 1 thread, reset below)

import torch  # noqa: E402

STATE_DIM, ACTION_DIM, TOKEN_SEED = 6, 6, 0
CAMERA = "observation.images.top"


def build(kind: str, geometry: dict, image: int, chunk: int, tokens: int):
    from lerobot.configs.types import FeatureType, PolicyFeature

    pi_oracle.install_patches()
    pi_oracle.set_geometry(geometry)
    config_cls, policy_cls, _ = pi_oracle.policy_classes(kind)
    inputs = {"observation.state": PolicyFeature(FeatureType.STATE, (STATE_DIM,)),
              CAMERA: PolicyFeature(FeatureType.VISUAL, (3, image, image))}
    outputs = {"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}
    cfg = config_cls(input_features=inputs, output_features=outputs, device="cpu", dtype="float32",
                     image_resolution=(image, image), chunk_size=chunk, n_action_steps=chunk,
                     tokenizer_max_length=tokens)
    policy = policy_cls(cfg).to("cpu")
    built = pi_oracle.built_geometry(policy)
    if built != geometry:
        sys.exit(f"pi_step.py: built geometry {built} is not the requested {geometry}")
    return policy


def make_batch(policy, b: int, image: int, chunk: int, tokens: int, vocab: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    cfg = policy.config
    return {
        "observation.state": torch.randn(b, STATE_DIM, generator=g),
        CAMERA: torch.rand(b, 3, image, image, generator=g),
        "observation.language.tokens": torch.randint(0, vocab, (b, tokens), generator=g),
        "observation.language.attention_mask": torch.ones(b, tokens, dtype=torch.bool),
        "action": torch.randn(b, chunk, ACTION_DIM, generator=g),
        "action_is_pad": torch.zeros(b, chunk, dtype=torch.bool),
        "noise": torch.randn(b, chunk, cfg.max_action_dim, generator=g),
        "time": 0.05 + 0.9 * torch.rand(b, generator=g),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", choices=("pi0", "pi05"), default="pi05")
    ap.add_argument("--geometry", required=True, help="geometry.json (pi_geometry.hpp's format)")
    ap.add_argument("--image", type=int, default=224, help="image_resolution (square), also the camera size")
    ap.add_argument("--batch-size", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("LRHOST_BENCH_THREADS", "2")))
    ap.add_argument("--lora", action="store_true",
                    help="LoRA with LeRobot's default targets (wrap_with_peft after torch.manual_seed(0)), as pi_step.lua lora=true")
    ap.add_argument("--profile", help="write a Chrome trace of one more step to this path (trace_ops.py sums it)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with open(args.geometry) as f:
        geometry = json.load(f)

    torch.manual_seed(0)
    t0 = time.perf_counter()
    policy = build(args.policy, geometry, args.image, args.chunk, args.tokens)
    if args.lora:
        policy.config.pretrained_path = "bench"  # wrap_with_peft's check; no weights are read
        torch.manual_seed(0)
        # lerobot-train's dataclasses.asdict(PeftConfig) for --peft.method_type=LORA (r 16 is PeftConfig's).
        defaults = dict(method_type="LORA", r=16, lora_alpha=None, target_modules=None, full_training_modules=None,
                        init_type=None)
        policy = policy.wrap_with_peft(peft_cli_overrides=defaults).get_base_model()
    built = time.perf_counter() - t0
    policy.train()
    batch = make_batch(policy, args.batch_size, args.image, args.chunk, args.tokens, geometry["vlm"]["vocab_size"])
    noise, t = batch.pop("noise"), batch.pop("time")
    model = policy.model
    model.sample_noise = lambda shape, device: noise  # instance attributes shadow the methods
    model.sample_time = lambda bsize, device: t
    preset = policy.config.get_optimizer_preset()
    opt = preset.build(policy.get_optim_params())
    clip = preset.grad_clip_norm
    params = [p for p in policy.parameters() if p.requires_grad]

    phases = {"forward": [], "backward": [], "optimizer": []}

    def step(record=False):
        t0 = time.perf_counter()
        loss, _ = policy.forward(batch)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(params, clip, error_if_nonfinite=False)
        opt.step()
        opt.zero_grad()
        if record:
            t3 = time.perf_counter()
            for name, dt in zip(phases, (t1 - t0, t2 - t1, t3 - t2)):
                phases[name].append(dt)
        return loss

    for _ in range(args.warmup):
        step()
    times = []
    cpu_start = time.process_time()
    for _ in range(args.steps):
        s = time.perf_counter()
        loss = step(record=True)
        times.append(time.perf_counter() - s)
    cpu = time.process_time() - cpu_start
    n_params = sum(p.numel() for p in policy.parameters())
    trainable = sum(p.numel() for p in params)
    print("$ " + " ".join(shlex.quote(x) for x in [sys.executable, *sys.argv]))
    print(f"lerobot {args.policy}{' LoRA' if args.lora else ''} step: {"/".join(Path(args.geometry).parts[-2:])} "
          f"({n_params} params, {trainable} trainable), batch {args.batch_size}, "
          f"image {args.image}, chunk {args.chunk}, {args.tokens} tokens, threads {torch.get_num_threads()}, fp32: "
          f"median {statistics.median(times):.4f} s/step (best {min(times):.4f}, mean {statistics.mean(times):.4f} "
          f"of {args.steps} after {args.warmup} warm-up; process CPU {cpu / args.steps:.4f} s/step; last loss "
          f"{loss.item():.4f})  [built in {built:.1f} s]", flush=True)
    med = {k: statistics.median(v) for k, v in phases.items()}
    print(f"lerobot {args.policy} phases (median s): forward {med['forward']:.4f}, backward {med['backward']:.4f}, "
          f"optimizer (clip + AdamW + zero_grad) {med['optimizer']:.4f}", flush=True)
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step()
        prof.export_chrome_trace(args.profile)
        print(f"profiler trace of one more step: {args.profile}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
