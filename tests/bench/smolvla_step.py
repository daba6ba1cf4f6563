"""SmolVLA training-step benchmark, Python side: LeRobot 0.6.1's own SmolVLAPolicy (the interop venv,
scripts/setup-interop; on the GPU machine the wheels of scripts/device-bench-smolvla), built offline
from the VLM folder --vlm (config only, load_vlm_weights=False: random weights; write one with
tests/interop/smolvla_oracle.py vlm DIR --full-size [--dtype hub]), with state [6], 1-3 cameras
observation.images.camera1..3 [3,H,W], action [6], chunk 50, pad_language_to="max_length". A random
already-preprocessed batch (cameras in [0, 1], 48 language tokens with an all-true bool mask,
action_is_pad all false; the processors are not part of the step) and per step what lerobot-train's
update_policy does: forward (loss), backward, clip_grad_norm_(grad_clip_norm = 10), optimizer.step(),
zero_grad(), with the policy's own preset (config.get_optimizer_preset(): AdamW lr 1e-4, betas
(0.9, 0.95), eps 1e-8, wd 1e-10) over policy.get_optim_params(). No autocast: the VLM folder's config
decides the dtypes (fp32, or with --dtype hub bf16 text model and expert), as in lerobot-train with
mixed_precision "no"; on CUDA also lerobot-train's torch.backends.cuda.matmul.allow_tf32 = True and
cudnn.benchmark = True (--no-tf32 keeps PyTorch's defaults: fp32 matmuls in full fp32). Prints
ms/step (mean of --steps after --warmup; wall and process CPU time), on CUDA the peak allocated
memory of the timed steps, and with --chunk the latency of one predict_action_chunk (prefix +
num_steps Euler steps) after one warm-up call.
Its twin is smolvla_step.lua (lrhost, same folder, batch and loop).

    python tests/bench/smolvla_step.py --vlm DIR [--batch-size 1] [--cameras 1] [--image 480x640]
        [--steps 3] [--warmup 1] [--threads 2] [--device cpu|cuda] [--chunk] [--no-tf32]
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

STATE_DIM, ACTION_DIM, CHUNK, TOKENS, TOKEN_VOCAB = 6, 6, 50, 48, 49152
CAMERAS = ("observation.images.camera1", "observation.images.camera2", "observation.images.camera3")


def build(vlm: str, cameras: int, image: tuple[int, int], device: str):
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

    inputs = {"observation.state": PolicyFeature(FeatureType.STATE, (STATE_DIM,))}
    for cam in CAMERAS[:cameras]:
        inputs[cam] = PolicyFeature(FeatureType.VISUAL, (3, *image))
    outputs = {"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}
    cfg = SmolVLAConfig(input_features=inputs, output_features=outputs, device=device,
                        vlm_model_name=str(Path(vlm).resolve()), load_vlm_weights=False,
                        pad_language_to="max_length", chunk_size=CHUNK, n_action_steps=CHUNK,
                        tokenizer_max_length=TOKENS)
    return SmolVLAPolicy(cfg).to(device)  # lerobot-train's make_policy: policy.to(cfg.device)


def make_batch(b: int, cameras: int, image: tuple[int, int], device: str) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    batch = {
        "observation.state": torch.randn(b, STATE_DIM, generator=g),
        "action": torch.randn(b, CHUNK, ACTION_DIM, generator=g),
        "action_is_pad": torch.zeros(b, CHUNK, dtype=torch.bool),
        "observation.language.tokens": torch.randint(0, TOKEN_VOCAB, (b, TOKENS), generator=g),
        "observation.language.attention_mask": torch.ones(b, TOKENS, dtype=torch.bool),
    }
    for cam in CAMERAS[:cameras]:
        batch[cam] = torch.rand(b, 3, *image, generator=g)
    return {k: v.to(device) for k, v in batch.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vlm", required=True, help="SmolVLM folder (smolvla_oracle.py vlm DIR --full-size)")
    ap.add_argument("--batch-size", type=int, default=1)
    ap.add_argument("--cameras", type=int, choices=(1, 2, 3), default=1)
    ap.add_argument("--image", default="480x640", help="HxW camera size")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--chunk", action="store_true", help="also time one predict_action_chunk")
    ap.add_argument("--profile", help="write a Chrome trace of one more step to this path (trace_ops.py sums it)")
    ap.add_argument("--no-tf32", action="store_true", help="CUDA: leave TF32 off (lerobot-train turns it on)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    h, w = (int(x) for x in args.image.split("x"))
    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        sys.exit(f"smolvla_step.py: --device {args.device} but torch {torch.__version__} sees no GPU")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    tf32 = cuda and not args.no_tf32
    if tf32:  # lerobot_train.py: cudnn.benchmark unless cudnn_deterministic; allow_tf32 always
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True

    torch.manual_seed(0)
    t0 = time.perf_counter()
    policy = build(args.vlm, args.cameras, (h, w), args.device)
    built = time.perf_counter() - t0
    policy.train()
    batch = make_batch(args.batch_size, args.cameras, (h, w), args.device)
    # lerobot-train: make_optimizer_and_scheduler -> preset.build(policy.get_optim_params())
    preset = policy.config.get_optimizer_preset()
    opt = preset.build(policy.get_optim_params())
    clip = preset.grad_clip_norm
    params = [p for p in policy.parameters() if p.requires_grad]

    def step():
        loss, _ = policy.forward(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, clip, error_if_nonfinite=False)
        opt.step()
        opt.zero_grad()
        return loss

    for _ in range(args.warmup):
        step()
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(args.steps):
        loss = step()
    sync()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    last = loss.item()
    peak = f"; GPU peak allocated {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB" if cuda else ""
    n_params = sum(p.numel() for p in policy.parameters())
    n_train = sum(p.numel() for p in params)
    dtypes = "+".join(sorted({str(p.dtype).removeprefix("torch.") for p in policy.parameters()}))
    print("$ " + " ".join(shlex.quote(x) for x in [sys.executable, *sys.argv]))
    weights = f"{dtypes} weights" + (", tf32" if tf32 else "")
    print(f"lerobot smolvla step: batch {args.batch_size}, {args.cameras} camera(s) {h}x{w}, threads "
          f"{torch.get_num_threads()}, device {args.device}, no autocast ({weights}), {n_params} params "
          f"({n_train} trainable), {type(opt).__name__}: {1000 * elapsed / args.steps:.1f} ms/step (mean of "
          f"{args.steps} after {args.warmup} warm-up; process CPU {1000 * cpu / args.steps:.1f} ms/step; "
          f"last loss {last:.4f}){peak}  [built in {built:.1f} s]", flush=True)
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
            step()
            sync()
        prof.export_chrome_trace(args.profile)
        print(f"profiler trace of one more step: {args.profile}")
    if args.chunk:
        policy.eval()
        obs = {k: v for k, v in batch.items() if k.startswith("observation.")}
        with torch.no_grad():
            policy.reset()
            policy.predict_action_chunk(obs)  # warm-up
            sync()
            t0 = time.perf_counter()
            chunk = policy.predict_action_chunk(obs)
            chunk.sum().item()
            sync()
            ms = 1000 * (time.perf_counter() - t0)
        print(f"lerobot smolvla inference: batch {args.batch_size}, {args.cameras} camera(s), {ms:.1f} ms per "
              f"predict_action_chunk (prefix + {policy.config.num_steps} Euler steps)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
