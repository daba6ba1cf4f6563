"""GR00T N1.7 training-step benchmark, Python side: LeRobot 0.6.1's own GrootPolicy (the interop venv,
scripts/setup-interop; needs dm-tree), built offline at the geometry of a geometry folder exactly as
tests/interop/groot_oracle.py builds its tiny one: ONE module-attribute patch
(lerobot.policies.groot.groot_n1_7._cosmos_reason2_qwen3_vl_config returns the folder's backbone_config.json
instead of Cosmos-Reason2-2B's hard-coded Qwen3-VL config), a Hub-layout cache of "nvidia/Cosmos-Reason2-2B"
holding the folder's tokenizer / chat template / image processor (HF_HUB_CACHE, offline), and a raw base
checkpoint (GR00TN17(the folder's config.json).save_pretrained + its processor_config.json) as
base_model_path. Everything else is LeRobot's code.

The geometry folder is lrhost's `policy.geometry` layout (config.json = GR00TN17Config, backbone_config.json,
processor_config.json, tokenizer.json, tokenizer_config.json, chat_template.jinja, preprocessor_config.json):
recipes/assets/groot_tiny (the oracle's tiny geometry), or the mid one `geometry mid DIR` writes.

Random weights (GR00T's own init), fp32: use_bf16=False (LeRobot's default True runs torch.autocast(bf16)
on the CPU too; lrhost's use_bf16 does the same), the default tuning (backbone frozen and in eval, action head
trained). Features: one camera observation.images.top (3, H, W), observation.state (6,), action (6,);
chunk_size = n_action_steps = the model's action_horizon. A random raw batch of --batch-size (camera in
[0, 1], one task string per row) goes once through LeRobot's preprocessor (make_groot_pre_post_processors
with min/max dataset stats); --write-batch FILE saves that processed batch (safetensors), which
groot_step.lua feeds to lrhost's policy, so both sides step on the same tensors. Per step what
lerobot-train's update_policy does: forward (train mode: dropout + state dropout), backward,
clip_grad_norm_(grad_clip_norm = 1), AdamW step (the policy's preset over get_optim_params(): lr 1e-4,
betas (0.9, 0.999), eps 1e-8, wd 1e-5, two weight-decay groups), zero_grad. Prints the median step time in
seconds of --steps timed steps after --warmup (and the fastest, the slowest, the mean, the process CPU
time per step), then the median of each phase. Threads: --threads, else LRHOST_BENCH_THREADS, else 2.
Its twin is groot_step.lua; scripts/bench groot runs both.

    python tests/bench/groot_step.py geometry mid DIR          (writes the mid geometry folder)
    python tests/bench/groot_step.py bench --geometry DIR [--image 40x56] [--batch-size 8] [--steps 10]
        [--warmup 2] [--threads N] [--write-batch FILE] [--profile trace.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TINY = HERE.parents[1] / "recipes" / "assets" / "groot_tiny"
COSMOS = "nvidia/Cosmos-Reason2-2B"
CAMERA = "observation.images.top"
STATE_DIM, ACTION_DIM = 6, 6
TASKS = ["Pick up the red cube!", "stack the blocks", "open the drawer", "place it in the bowl"]
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


def write_mid_geometry(out: Path) -> None:
    """The mid geometry: the tiny folder's tokenizer, a Qwen3-VL backbone 256 wide (4 text layers of which
    select_layer 3 keep 3, 4 x 64 heads, 2 KV heads, MLP 768; 4 vision blocks 256 wide, MLP 1024, patch 16,
    DeepStack after blocks 1 and 3) and an action head with N1.7's layout at smaller widths (vlln + 2
    vl_self_attention blocks of 4 x 64; an 8-block DiT of 8 x 48 = 384, output 256; hidden 256), N1.7's
    image sizes (256 -> crop 230 -> 256: 256 patches, 64 image tokens per camera), horizon 16, N1.7's state / action
    dims 132 (LeRobot remaps 32 and 64, N1.5's, to 132), its 32 embodiments and 1024 positions."""
    out.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copyfile(TINY / name, out / name)
    pre = json.loads((TINY / "preprocessor_config.json").read_text())
    pre["patch_size"] = 16
    (out / "preprocessor_config.json").write_text(json.dumps(pre, indent=2) + "\n")
    (out / "processor_config.json").write_text(json.dumps(
        {"processor_kwargs": {"image_target_size": [256, 256], "image_crop_size": [230, 230]}}, indent=2) + "\n")
    bb = json.loads((TINY / "backbone_config.json").read_text())
    bb["text_config"].update(hidden_size=256, intermediate_size=768, num_hidden_layers=4, num_attention_heads=4,
                             num_key_value_heads=2, head_dim=64)
    bb["text_config"]["rope_parameters"]["mrope_section"] = [12, 10, 10]  # head_dim / 2, as [24, 20, 20] of 128
    bb["vision_config"].update(depth=4, hidden_size=256, intermediate_size=1024, num_heads=4, patch_size=16,
                               out_hidden_size=256, num_position_embeddings=2304, deepstack_visual_indexes=[1, 3])
    (out / "backbone_config.json").write_text(json.dumps(bb, indent=2) + "\n")
    model = json.loads((TINY / "config.json").read_text())
    model.update(backbone_embedding_dim=256, select_layer=3, hidden_size=256, input_embedding_dim=384,
                 max_state_dim=132, max_action_dim=132, action_horizon=16, max_seq_len=1024, max_num_embodiments=32)
    model["diffusion_model_cfg"].update(num_layers=8, num_attention_heads=8, attention_head_dim=48, output_dim=256)
    model["vl_self_attention_cfg"].update(num_layers=2, num_attention_heads=4, attention_head_dim=64)
    (out / "config.json").write_text(json.dumps(model, indent=2) + "\n")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("geometry", help="write a geometry folder")
    g.add_argument("size", choices=["mid"])
    g.add_argument("out")
    b = sub.add_parser("bench", help="time LeRobot's training step")
    b.add_argument("--geometry", required=True, help="a geometry folder (lrhost's policy.geometry layout)")
    b.add_argument("--image", default="40x56", help="HxW of the raw camera (the processor resizes it)")
    b.add_argument("--batch-size", type=int, default=8)
    b.add_argument("--steps", type=int, default=10)
    b.add_argument("--warmup", type=int, default=2)
    b.add_argument("--threads", type=int, default=int(os.environ.get("LRHOST_BENCH_THREADS", "2")))
    b.add_argument("--write-batch", help="save the processed batch (safetensors) for groot_step.lua")
    b.add_argument("--profile", help="write a Chrome trace of one more step to this path (trace_ops.py sums it)")
    return ap.parse_args()


def make_hf_cache(root: Path, geometry: Path, backbone: dict) -> None:
    """The geometry's tokenizer + image/video processor + backbone config as the Hub cache entry of COSMOS."""
    repo = root / ("models--" + COSMOS.replace("/", "--"))
    snap = repo / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    for name in TOKENIZER_FILES:
        shutil.copyfile(geometry / name, snap / name)
    pre = json.loads((geometry / "preprocessor_config.json").read_text())
    (snap / "preprocessor_config.json").write_text(json.dumps(pre, indent=2))
    (snap / "video_preprocessor_config.json").write_text(
        json.dumps({**pre, "video_processor_type": "Qwen3VLVideoProcessor"}, indent=2))
    (snap / "config.json").write_text(json.dumps(backbone, indent=2))


def main() -> int:
    args = parse_args()
    if args.command == "geometry":
        write_mid_geometry(Path(args.out))
        print(f"groot_step.py: wrote the {args.size} geometry to {args.out}")
        return 0

    geometry = Path(args.geometry).resolve()
    backbone = json.loads((geometry / "backbone_config.json").read_text())
    model_cfg = json.loads((geometry / "config.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="groot_step_"))
    try:
        make_hf_cache(work / "hf_cache", geometry, backbone)
        # Before huggingface_hub / transformers are imported (they read these at import time).
        os.environ["HF_HUB_CACHE"] = str(work / "hf_cache")
        os.environ["HF_HUB_OFFLINE"] = "1"
        return run(args, geometry, backbone, model_cfg, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, geometry: Path, backbone: dict, model_cfg: dict, work: Path) -> int:
    sys.path.insert(0, str(HERE.parent / "interop"))
    import _lerobot_compat  # noqa: F401  (offline hub; before any lerobot import)

    try:
        import tree  # noqa: F401  (dm-tree: GR00TN17.prepare_input)
    except ImportError:
        print("groot_step.py: dm-tree is missing (import tree): run scripts/setup-interop", file=sys.stderr)
        return 77
    import torch
    import transformers
    from safetensors.torch import save_file
    from transformers import Qwen3VLConfig

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    from lerobot.configs import FeatureType, PolicyFeature
    import lerobot.policies.groot.groot_n1_7 as g17
    from lerobot.policies.groot.configuration_groot import GrootConfig
    from lerobot.policies.groot.modeling_groot import GrootPolicy
    from lerobot.policies.groot.processor_groot import make_groot_pre_post_processors

    g17._cosmos_reason2_qwen3_vl_config = lambda: Qwen3VLConfig.from_dict(backbone)  # the one patch
    h, w = (int(x) for x in args.image.split("x"))
    horizon = model_cfg["action_horizon"]
    t0 = time.perf_counter()
    base = work / "base"
    torch.manual_seed(0)
    g17.GR00TN17(g17.GR00TN17Config.from_dict(model_cfg), load_backbone_weights=False).save_pretrained(str(base))
    shutil.copyfile(geometry / "processor_config.json", base / "processor_config.json")
    cfg = GrootConfig(
        base_model_path=str(base), chunk_size=horizon, n_action_steps=horizon,
        max_state_dim=model_cfg["max_state_dim"], max_action_dim=model_cfg["max_action_dim"], device="cpu",
        use_bf16=False,
        input_features={CAMERA: PolicyFeature(FeatureType.VISUAL, (3, h, w)),
                        "observation.state": PolicyFeature(FeatureType.STATE, (STATE_DIM,))},
        output_features={"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))})
    torch.manual_seed(0)
    policy = GrootPolicy(cfg)
    dims = {"observation.state": STATE_DIM, "action": ACTION_DIM}
    stats = {k: {"min": -2.0 * torch.ones(d), "max": 2.0 * torch.ones(d)} for k, d in dims.items()}
    pre, _post = make_groot_pre_post_processors(cfg, dataset_stats=stats)
    built = time.perf_counter() - t0

    b = args.batch_size
    g = torch.Generator().manual_seed(1)
    raw = {CAMERA: torch.rand(b, 3, h, w, generator=g), "observation.state": torch.randn(b, STATE_DIM, generator=g),
           "action": torch.randn(b, horizon, ACTION_DIM, generator=g),
           "action_is_pad": torch.zeros(b, horizon, dtype=torch.bool),
           "task": [TASKS[i % len(TASKS)] for i in range(b)]}
    batch = pre(raw)
    tensors = {k: v for k, v in batch.items() if isinstance(v, torch.Tensor)}
    if args.write_batch:
        save_file({k: v.contiguous() for k, v in tensors.items()}, args.write_batch)
    shapes = ", ".join(f"{k} ({','.join(map(str, tensors[k].shape))})"
                       for k in ("input_ids", "pixel_values", "image_grid_thw", "state", "action") if k in tensors)

    preset = policy.config.get_optimizer_preset()
    opt = preset.build(policy.get_optim_params())
    clip = preset.grad_clip_norm
    params = [p for p in policy.parameters() if p.requires_grad]
    policy.train()

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
    print(f"lerobot groot batch: {shapes}")
    print(f"lerobot groot step: {geometry.name} ({n_params} params, {trainable} trainable), batch {b}, image {h}x{w}, "
          f"chunk {horizon}, threads {torch.get_num_threads()}, fp32: median {statistics.median(times):.4f} s/step "
          f"(best {min(times):.4f}, worst {max(times):.4f}, mean {statistics.mean(times):.4f} of {args.steps} after "
          f"{args.warmup} warm-up; process CPU {cpu / args.steps:.4f} s/step; last loss {loss.item():.4f})  "
          f"[built in {built:.1f} s]", flush=True)
    med = {k: statistics.median(v) for k, v in phases.items()}
    print(f"lerobot groot phases (median s): forward {med['forward']:.4f}, backward {med['backward']:.4f}, "
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
