"""The EMA of an lrhost run against diffusers' EMAModel, as LeRobot main builds it (reference ema.md).

    python ema_oracle.py RUN_DIR BASE_DIR SETTINGS_JSON [--lerobot-load]

RUN_DIR is a run trained from the pretrained folder BASE_DIR with ema.enable=true and a checkpoint at
every step. EMAModel(decay=max, min_decay=min, update_after_step, use_ema_warmup=True, inv_gamma,
power) starts from BASE_DIR's weights of the tensors the run's EMA tracks and is fed, step by step,
the live weights each checkpoint's pretrained_model/ holds; after every step its shadows must equal
that checkpoint's pretrained_model_ema/ bit for bit (fp32), the untracked tensors must equal the live
ones, and training_state/ema_state.json must hold diffusers' step and decay. SETTINGS_JSON's
"accumulation" (default 1) is the run's gradient accumulation: steps are micro-steps, and the EMA moves
only with the optimizer, at every accumulation-th one (LeRobot's sync_gradients gate). With --lerobot-load,
LeRobot 0.6.1 loads the last pretrained_model_ema/ as an ordinary policy with exactly its weights.
"""

import json
import sys
from pathlib import Path

import torch
from diffusers.training_utils import EMAModel
from safetensors.torch import load_file


def tracked_names(state_dir: Path) -> list[str]:
    shadow = state_dir / "ema_shadow.safetensors"
    if shadow.exists():
        return sorted(load_file(shadow).keys())
    # FSDP: the shadows are rows of the shard files, one per trainable parameter of the index.
    index = json.loads((state_dir / "fsdp_shards" / "index.json").read_text())
    assert index.get("ema") is True, "the shard index says the shards hold no EMA"
    return sorted(index["params"].keys())


def main() -> int:
    run, base, settings = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
    accumulation = settings.pop("accumulation", 1)
    steps = sorted(int(p.name) for p in (run / "checkpoints").iterdir() if p.name.isdigit())
    assert steps == list(range(1, len(steps) + 1)), f"expected a checkpoint at every step, got {steps}"
    names = tracked_names(run / "checkpoints" / f"{steps[0]:06d}" / "training_state")
    base_state = load_file(base / "model.safetensors")
    params = [torch.nn.Parameter(base_state[n].clone().float()) for n in names]
    constant = settings.get("decay")
    ema = EMAModel(
        params,
        decay=settings.get("max_decay", 0.9999) if constant is None else constant,
        min_decay=settings.get("min_decay", 0.0) if constant is None else constant,
        update_after_step=settings.get("update_after_step", 0),
        use_ema_warmup=True,
        inv_gamma=settings.get("inv_gamma", 1.0),
        power=settings.get("power", 0.75),
    )
    worst_live = 0
    for step in steps:
        folder = run / "checkpoints" / f"{step:06d}"
        live = load_file(folder / "pretrained_model" / "model.safetensors")
        with torch.no_grad():
            for name, p in zip(names, params):
                p.copy_(live[name])
        if step % accumulation == 0:
            ema.step(params)
        averaged = load_file(folder / "pretrained_model_ema" / "model.safetensors")
        assert averaged.keys() == live.keys(), f"step {step}: the EMA folder's tensors differ from the live ones"
        for name, shadow in zip(names, ema.shadow_params):
            if not torch.equal(averaged[name], shadow):
                diff = (averaged[name] - shadow).abs().max().item()
                raise AssertionError(f"step {step}: '{name}' differs from diffusers' shadow by {diff:.3g}")
        for name in live.keys() - set(names):
            assert torch.equal(averaged[name], live[name]), f"step {step}: untracked '{name}' is not the live tensor"
        if step > accumulation:
            worst_live = max(worst_live, max((averaged[n] - live[n]).abs().max().item() for n in names))
        state = json.loads((folder / "training_state" / "ema_state.json").read_text())
        assert state["optimization_step"] == ema.optimization_step, (state, ema.optimization_step)
        decay = ema.cur_decay_value or 0.0  # None before the first update
        assert state["cur_decay_value"] == decay, (state["cur_decay_value"], decay)
    # The check could not pass with the live weights in place of the EMA's.
    assert worst_live > 0 or settings.get("decay") == 0, "the EMA weights equal the live ones"
    print(f"ema ok: {len(steps)} steps, {len(names)} tracked tensors equal diffusers' EMAModel bit for bit "
          f"(decay {ema.cur_decay_value:.6g} at the end; EMA vs live up to {worst_live:.3g})")
    if "--lerobot-load" in sys.argv:
        from lerobot.policies.act.modeling_act import ACTPolicy

        last = run / "checkpoints" / f"{steps[-1]:06d}" / "pretrained_model_ema"
        policy = ACTPolicy.from_pretrained(str(last))
        saved = load_file(last / "model.safetensors")
        loaded = policy.state_dict()
        for name, tensor in saved.items():
            assert torch.equal(loaded[name].cpu(), tensor), f"LeRobot loaded '{name}' differently"
        print(f"LeRobot 0.6.1 loads {last} as an ACT policy with its {len(saved)} tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
