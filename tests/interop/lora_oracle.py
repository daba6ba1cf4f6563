"""LeRobot 0.6.1 + PEFT 0.18's side of the LoRA interop tests (run_lora_interop.sh; lrhost's side is
lora_driver.lua). The pretrained tiny policy comes from smolvla_oracle.py / pi_oracle.py `make`; the
policy's own protocol (run_protocol of those oracles: loss and gradients with given noise and time, a
sampled chunk) runs on the adapted policy.

Subcommands:
  wrap SRC OUT --config default|second|openpi --seed S
      LeRobot's lerobot-train path for `--peft.*`: SRC loaded as a pretrained policy (pretrained_path =
      SRC), torch.manual_seed(S) right before PreTrainedPolicy.wrap_with_peft(peft_cli_overrides=CONFIG),
      then saved as lerobot-train's save_checkpoint writes a PEFT policy's pretrained_model/: the PEFT
      model's save_pretrained (adapter_model.safetensors, adapter_config.json), the policy config with
      use_peft, and SRC's processor files (and pi's geometry.json).
  run DIR INPUTS OUT
      DIR loaded as LeRobot's make_policy loads a use_peft folder (PeftConfig.from_pretrained, the base
      from base_model_name_or_path with DIR's config, PeftModel.from_pretrained(is_trainable=True)). Then:
      OUT        the protocol at the adapters as loaded (grad.<name>: every trainable parameter);
      OUT.s1     the protocol again after one AdamW step (ADAMW) on those gradients;
      OUT.after  after.<name>: every trainable parameter after a second AdamW step.
      Names are the policy's (PEFT's saved names without "base_model.model.").
  compare REF OTHER
      Two `run` outputs (REF = LeRobot on its own adapters): OUT and OUT.s1 with the policy type's
      protocol tolerances, OUT.after with AFTER_TOLERANCE.
  compare-adapters REF_DIR OTHER_DIR
      Two adapter folders: adapter_config.json equal field by field (base_model_name_or_path compared
      as resolved paths), adapter_model.safetensors with the same names, shapes, dtypes and values.
  compare-merged ADAPTER_OUT MERGED_OUT
      LeRobot's protocol on an adapter folder (`run` OUT) against its protocol on the plain folder
      `lrhost checkpoint merge` made of it (the type oracle's `run`): loss, chunk and chunk_unnorm
      with the type's fp32 tolerances. Merging changes only the fp32 rounding of each adapted
      linear (W x + s B (A x) against (W + s B A) x), the order of the differences in op composition
      those tolerances are made for.
  batch CMD ARGS... [SEP CMD ARGS...]
      The commands above in this one process; see policy_oracle.py batch.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lerobot_compat  # noqa: E402,F401  (offline hub; before any lerobot import)

import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from oracle_common import compare_outputs, read_json  # noqa: E402
from policy_oracle import run_batch  # noqa: E402

# The second configuration of the issue: rank 8, alpha 32, a list of targets (PEFT's suffix matching:
# the VLM's and the expert's q/v projections and the action head), a module trained in full, rslora.
SECOND = {
    "smolvla": dict(r=8, lora_alpha=32, target_modules=["q_proj", "v_proj", "action_out_proj"],
                    full_training_modules=["state_proj"], use_rslora=True),
    "pi0": dict(r=8, lora_alpha=32, target_modules=["q_proj", "v_proj", "action_out_proj"],
                full_training_modules=["state_proj"], use_rslora=True),
    "pi05": dict(r=8, lora_alpha=32, target_modules=["q_proj", "v_proj", "action_out_proj"],
                 full_training_modules=["time_mlp_in"], use_rslora=True),
}
# openpi's recipe (gemma_2b_lora / gemma_300m_lora and its freeze filter) in PEFT's terms, as lrhost's
# policy.peft.preset = "openpi" means it: rank 16 / alpha 16 on the VLM's attention and MLP, 32 / 32 on
# the expert's, SigLIP, the projector and the policy's projections trained in full.
OPENPI_TARGETS = (r".*\.(paligemma\.model\.language_model|gemma_expert\.model)\.layers\.\d+\."
                  r"(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj)")
OPENPI = {
    kind: dict(r=16, lora_alpha=16, target_modules=OPENPI_TARGETS, rank_pattern={r"gemma_expert\..*": 32},
               alpha_pattern={r"gemma_expert\..*": 32},
               full_training_modules=["vision_tower", "multi_modal_projector", "action_in_proj", "action_out_proj",
                                      *projections])
    for kind, projections in (("pi0", ["state_proj", "action_time_mlp_in", "action_time_mlp_out"]),
                              ("pi05", ["time_mlp_in", "time_mlp_out"]))
}
# The optimizer of `run`, also lora_driver.lua's.
ADAMW = dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=1e-2)
# after.<name> = w0 * (1 - lr * wd)^2 - lr * (u1 + u2), Adam's updates u = m_hat / (sqrt(v_hat) + eps). An
# update depends on the gradients only through their ratios (it is of degree 0 in g), so where two runs'
# gradients g0 (step 0) and g1 (step 1) of an element differ by the relative amounts d0 and d1, u1 moves
# by at most 2 d0 and u2 by at most 4 (d0 + d1) (both at most 2 and 4 in all: a gradient within its
# error of 0 may change sign). The element's bound is lr times that sum, plus the fp32 rounding of the
# two steps: 4 ulp of the largest value a step handled, |w| + 4 lr (w0 = w + lr (u1 + u2) up to decay,
# |u| <= 2); the gradients' own agreement is the protocol's check.
def after_bound(w: torch.Tensor, g0: tuple, g1: tuple) -> torch.Tensor:
    def rel(pair):
        r, o = (t.double() for t in pair)
        return (r - o).abs() / (r.abs() + ADAMW["eps"])
    d0, d1 = rel(g0), rel(g1)
    moves = torch.clamp(2 * d0, max=2.0) + torch.clamp(4 * (d0 + d1), max=4.0)
    return ADAMW["lr"] * moves + 4 * torch.finfo(torch.float32).eps * (w.double().abs() + 4 * ADAMW["lr"])


def log(msg: str) -> None:
    print(f"[lora-oracle] {msg}", flush=True)


def peft_overrides(kind: str, config: str) -> dict:
    """lerobot-train's peft_cli_overrides (dataclasses.asdict(PeftConfig)) of a configuration."""
    base = dict(method_type="LORA", r=16, lora_alpha=None, target_modules=None, full_training_modules=None,
                init_type=None)
    if config == "default":
        return base
    return {**base, **(OPENPI if config == "openpi" else SECOND)[kind]}


def type_module(kind: str):
    """The policy type's oracle module (loading patches, protocol, tolerances) and its policy class."""
    if kind == "smolvla":
        import smolvla_oracle
        from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy
        return smolvla_oracle, SmolVLAPolicy
    import pi_oracle
    pi_oracle.install_patches()
    return pi_oracle, pi_oracle.policy_classes(kind)[1]


def prepare(kind: str, folder: Path, oracle) -> None:
    if kind != "smolvla":  # the tiny geometry and the tokenizer cache (pi_oracle.py's cmd_run)
        oracle.use_hf_cache(oracle.hf_cache_dir(folder))
        oracle.set_geometry(read_json(folder / "geometry.json"))


def policy_name(peft_name: str) -> str:
    """A PEFT model's parameter name as the policy's saved name: no adapter name, no wrappers."""
    name = peft_name.removeprefix("base_model.model.")
    for infix in (".lora_A.default.", ".lora_B.default."):
        name = name.replace(infix, infix.replace("default.", ""))
    return name.replace(".base_layer.", ".").replace(".modules_to_save.default.", ".")


def cmd_wrap(args) -> int:
    from lerobot.configs.policies import PreTrainedConfig

    src, out = Path(args.src), Path(args.out)
    oracle, policy_cls = type_module(read_json(src / "config.json")["type"])  # registers the config class
    cfg = PreTrainedConfig.from_pretrained(src)
    prepare(cfg.type, src, oracle)
    cfg.pretrained_path = str(src)  # lerobot-train's --policy.path
    policy = policy_cls.from_pretrained(src, config=cfg)
    torch.manual_seed(args.seed)
    peft_model = policy.wrap_with_peft(peft_cli_overrides=peft_overrides(cfg.type, args.config))
    if out.exists():
        shutil.rmtree(out)
    peft_model.save_pretrained(out)
    peft_model.get_base_model().config.save_pretrained(out)  # use_peft: true (save_checkpoint)
    for f in src.iterdir():
        if f.name not in ("model.safetensors", "config.json") and f.is_file():
            shutil.copy(f, out / f.name)
    trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    log(f"LeRobot wrapped {cfg.type} {src} with PEFT ({args.config}: {peft_model.peft_config['default'].r=}, "
        f"targets {peft_model.peft_config['default'].target_modules}); {trainable} trainable; saved {out}: "
        f"{sorted(p.name for p in out.iterdir())}")
    return 0


def load_adapter_folder(folder: Path):
    """make_policy's use_peft branch (lerobot:policies/factory.py l.345-372)."""
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import make_pre_post_processors
    from peft import PeftConfig, PeftModel

    oracle, policy_cls = type_module(read_json(folder / "config.json")["type"])  # registers the config class
    cfg = PreTrainedConfig.from_pretrained(folder)
    assert cfg.use_peft, f"{folder}/config.json: use_peft is not true"
    prepare(cfg.type, folder, oracle)
    peft_config = PeftConfig.from_pretrained(str(folder))
    policy = policy_cls.from_pretrained(peft_config.base_model_name_or_path, config=cfg)
    peft_model = PeftModel.from_pretrained(policy, str(folder), config=peft_config, is_trainable=True)
    pre, post = make_pre_post_processors(cfg, pretrained_path=str(folder))
    return cfg, oracle, peft_model, pre, post


def protocol(oracle, peft_model, pre, post, inputs, tasks) -> dict:
    policy = peft_model.get_base_model()  # the policy with PEFT's layers in place
    # SmolVLA's protocol checks train_expert_only (no trainable VLM parameter) and that every trainable
    # parameter gets a gradient: adapters on the VLM are trainable by design, and those of the last VLM
    # layer's q_proj are read by no output (their gradients are None on both sides; the comparison checks
    # the set of gradients). Lifted for the call only (nothing reads the field after __init__).
    smolvla = policy.config.type == "smolvla"
    expert_only = policy.config.train_expert_only if smolvla else None
    extra = {}
    if smolvla:
        policy.config.train_expert_only = False
        extra["every_trainable_used"] = False
    try:
        out, _ = oracle.run_protocol(policy, pre, post, inputs, tasks, **extra)
    finally:
        if smolvla:
            policy.config.train_expert_only = expert_only
    renamed = {}
    for k, v in out.items():
        renamed["grad." + policy_name(k.removeprefix("grad.")) if k.startswith("grad.") else k] = v
    return renamed


def cmd_run(args) -> int:
    folder = Path(args.dir)
    cfg, oracle, peft_model, pre, post = load_adapter_folder(folder)
    inputs = load_file(args.inputs)
    with open(f"{args.inputs}.tasks.json") as f:
        tasks = json.load(f)
    trainable = [(n, p) for n, p in peft_model.named_parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW([p for _, p in trainable], **ADAMW)
    meta = {"producer": "lerobot-0.6.1+peft", "precision": "fp32", "type": cfg.type}
    first = protocol(oracle, peft_model, pre, post, inputs, tasks)
    optimizer.step()
    second = protocol(oracle, peft_model, pre, post, inputs, tasks)
    optimizer.step()
    after = {f"after.{policy_name(n)}": p.detach().clone().contiguous() for n, p in trainable}
    save_file(first, args.out, metadata=meta)
    save_file(second, f"{args.out}.s1", metadata=meta)
    save_file(after, f"{args.out}.after", metadata=meta)
    log(f"LeRobot+PEFT {cfg.type} from {folder}: {len(trainable)} trainable tensors, loss {first['loss'].item():.8f} "
        f"then {second['loss'].item():.8f}; wrote {args.out}(.s1, .after)")
    return 0


def cmd_compare(args) -> int:
    with safe_open(args.ref, framework="pt") as f:
        kind = (f.metadata() or {})["type"]
    oracle, _ = type_module(kind)
    tables = {"fp32": oracle.TOLERANCES, "bf16": oracle.TOLERANCES_BF16}
    failed = 0
    for suffix in ("", ".s1"):
        failed |= compare_outputs(args.ref + suffix, args.other + suffix, tables, log, meta_keys=())
    ref, got = load_file(args.ref + ".after"), load_file(args.other + ".after")
    grads = {key: (load_file(args.ref + key), load_file(args.other + key)) for key in ("", ".s1")}
    bad = sorted(set(ref) ^ set(got))
    worst = 0.0
    for name, r in ref.items():
        if name not in got:
            continue
        g = "grad." + name.removeprefix("after.")
        pairs = [(a.get(g, torch.zeros_like(r)), b.get(g, torch.zeros_like(r))) for a, b in grads.values()]
        err = (r.double() - got[name].double()).abs()
        worst = max(worst, err.max().item())
        over = err > after_bound(r, *pairs)
        if over.any():
            i = int(over.flatten().nonzero()[0])
            bad.append(f"{name}: {int(over.sum())} element(s) beyond the bound; at flat index {i} "
                       f"{got[name].flatten()[i].item():.8g} vs LeRobot {r.flatten()[i].item():.8g}")
    for b in bad[:20]:
        log("MISMATCH " + b)
    log(f"{'FAILED' if bad else 'OK'}: {len(ref)} adapter tensors after two AdamW steps, max |diff| {worst:.3g} "
        "(bound per element from the gradients' agreement, after_bound)")
    return 1 if failed or bad else 0


def cmd_compare_merged(args) -> int:
    with safe_open(args.adapter_out, framework="pt") as f:
        kind = (f.metadata() or {})["type"]
    oracle, _ = type_module(kind)
    ref, got = load_file(args.adapter_out), load_file(args.merged_out)
    bad = []
    for name in ("loss", "chunk", "chunk_unnorm"):
        rel, floor, *_ = oracle.TOLERANCES[name]
        r, g = ref[name].double(), got[name].double()
        bound = rel if floor is None else rel * max(floor, r.abs().max().item())
        d = (r - g).abs().max().item()
        log(f"{name}: max |diff| {d:.3g}; tolerance {bound:.3g}")
        if d > bound:
            bad.append(f"{name}: max |diff| {d:.3g} > {bound:.3g}")
    for b in bad:
        log("MISMATCH " + b)
    log(f"{'FAILED' if bad else 'OK'}: the merged folder {args.merged_out} vs its adapters {args.adapter_out}")
    return 1 if bad else 0


def cmd_compare_adapters(args) -> int:
    ref_dir, other_dir = Path(args.ref_dir), Path(args.other_dir)
    ref_cfg, other_cfg = read_json(ref_dir / "adapter_config.json"), read_json(other_dir / "adapter_config.json")
    bad = []
    for key in sorted(set(ref_cfg) | set(other_cfg)):
        a, b = ref_cfg.get(key, "<absent>"), other_cfg.get(key, "<absent>")
        if key == "base_model_name_or_path":
            a, b = str(Path(a).resolve()), str(Path(b).resolve())
        if isinstance(a, list) and isinstance(b, list) and key in ("target_modules", "modules_to_save"):
            a, b = sorted(a), sorted(b)  # PEFT stores list targets as a set
        if a != b:
            bad.append(f"adapter_config.json {key}: {b!r} vs LeRobot's {a!r}")
    if read_json(other_dir / "config.json").get("use_peft") is not True:
        bad.append("config.json: use_peft is not true")
    ref, got = load_file(str(ref_dir / "adapter_model.safetensors")), load_file(str(other_dir / "adapter_model.safetensors"))
    bad += [f"adapter_model.safetensors: {k} only in {'LeRobot' if k in ref else 'other'}'s" for k in sorted(set(ref) ^ set(got))]
    for k, r in ref.items():
        if k in got and (r.dtype != got[k].dtype or r.shape != got[k].shape or not torch.equal(r, got[k])):
            bad.append(f"adapter_model.safetensors {k}: {got[k].dtype}{tuple(got[k].shape)} differs from LeRobot's "
                       f"{r.dtype}{tuple(r.shape)} (max |diff| {(r.double() - got[k].double()).abs().max().item():.3g})")
    with safe_open(str(other_dir / "adapter_model.safetensors"), framework="pt") as f:
        if (f.metadata() or {}).get("format") != "pt":
            bad.append("adapter_model.safetensors: metadata format is not 'pt'")
    for b in bad[:30]:
        log("MISMATCH " + b)
    log(f"FAILED: {len(bad)} problem(s)" if bad else
        f"OK: {other_dir} vs LeRobot's {ref_dir}: {len(ref_cfg)} config fields, {len(ref)} adapter tensors exactly equal")
    return 1 if bad else 0


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("wrap")
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("--config", choices=("default", "second", "openpi"), default="default")
    p.add_argument("--seed", type=int, default=42)
    p = sub.add_parser("run")
    p.add_argument("dir")
    p.add_argument("inputs")
    p.add_argument("out")
    p = sub.add_parser("compare")
    p.add_argument("ref")
    p.add_argument("other")
    p = sub.add_parser("compare-merged")
    p.add_argument("adapter_out")
    p.add_argument("merged_out")
    p = sub.add_parser("compare-adapters")
    p.add_argument("ref_dir")
    p.add_argument("other_dir")
    return ap.parse_args(argv)


def run(args: argparse.Namespace) -> int:
    return {"wrap": cmd_wrap, "run": cmd_run, "compare": cmd_compare,
            "compare-adapters": cmd_compare_adapters, "compare-merged": cmd_compare_merged}[args.cmd](args)


def main(argv: list[str]) -> int:
    if argv[:1] == ["batch"]:
        return run_batch("lora_oracle.py", argv[1:], parse, run)
    return run(parse(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
