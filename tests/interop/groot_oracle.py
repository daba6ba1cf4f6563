"""Test oracle for a GR00T N1.7 port (`policy.type = "groot"`): LeRobot 0.6.1's own GrootPolicy, built
offline at a tiny geometry (reference/groot.md §9), taken through its processors, the flow-matching loss and
its gradients, sampling and save/reload. Everything is LeRobot's / transformers' code except ONE
module-attribute patch: lerobot.policies.groot.groot_n1_7._cosmos_reason2_qwen3_vl_config returns the tiny
Qwen3-VL config of tiny_qwen3_vl_config() instead of Cosmos-Reason2-2B's hard-coded one.

    python groot_oracle.py OUT [--tune-llm-visual] [--threads 1]

Needs dm-tree (`import tree`, GR00TN17.prepare_input); scripts/setup-interop installs it (exit 77 without).
HF_HUB_CACHE is set to OUT/hf_cache and the Hub is offline: the tokenizer / image processor of LeRobot's
hard-coded "nvidia/Cosmos-Reason2-2B" are a tiny byte-level BPE (Qwen2Tokenizer, Qwen specials, a
Qwen3-VL-style chat template) and a patch-8 Qwen2VLImageProcessor stored there in the Hub layout. Sizes, seeds
and the raw batch are groot.md §9.2's, so the numbers can be checked against §9.3 (LOSS_GROOT_MD). Weights are
GR00T's own init (seed BASE_SEED); the policy loads them from the raw base checkpoint OUT/base.

Writes into OUT (tensor files are safetensors; float32 unless noted):
  base/                     raw N1.7 base checkpoint (GR00TN17.save_pretrained: config.json with the tiny
                            GR00TN17Config, model.safetensors) + processor_config.json (image sizes 48/44)
  hf_cache/                 Hub-layout cache models--nvidia--Cosmos-Reason2-2B (tokenizer, chat template,
                            preprocessor_config.json, video_preprocessor_config.json, the tiny Qwen3-VL
                            config.json); must be HF_HUB_CACHE when LeRobot reloads policy/
  policy/                   policy.save_pretrained + preprocessor.save_pretrained + postprocessor
                            .save_pretrained (config.json's base_model_path = the absolute OUT/base)
  raw_batch.safetensors     the raw batch: observation.images.{front,wrist} (2,3,40,56) in [0,1],
                            observation.state (2,6), action (2,8,6), action_is_pad (2,8) bool (sample 1's
                            last 2 steps); raw_batch.json: the task strings, seeds
  processed_batch.safetensors  every tensor the preprocessor outputs (input_ids, attention_mask,
                            mm_token_type_ids, pixel_values, image_grid_thw, state, action, action_mask,
                            embodiment_id int32, ...); processed_batch.json: each tensor's shape/dtype, the
                            non-tensor entries, the decoded prompts
  keys.json                 state_dict key -> {shape, dtype, requires_grad, in_model_safetensors[, tied_to]}
  loss.json                 eval_loss (eval mode: no dropout, no state dropout; torch.manual_seed(LOSS_SEED)
                            before forward, so only the noise / time draws are random) and train_loss
                            (train mode, same seed: dropout + state dropout), the parameter counts, the RNG
                            draws of each forward in order (rng: see below), the §9.3 comparison
  grads.safetensors         <param name> -> gradient of every trainable parameter that gets one, from
                            backward of eval_loss (loss.json lists trainable ones that get none)
  draws.safetensors         eval.noise (B,8,16), eval.time (B), eval.t_bucket (B) int64: the eval forward's
                            draws replayed from LOSS_SEED; train.NN / eval.NN / chunk.NN: the output of
                            the NN-th RNG op of that forward (loss.json rng.*[NN].tensor), e.g. each dropout's
                            bernoulli_(0.8) mask, so a port can also replay train mode without an RNG
  intermediates.safetensors eval forward: position_ids (4,B,L) (the legacy row + 3 M-RoPE rows),
                            backbone_features (B,L,64) (layer select_layer-1, pre-norm), backbone_attention_mask,
                            image_mask (bool), vl_embeds (after vlln + vl_self_attention), action_encoder_in
                            (x_t), t_bucket, decoder_out (B,9,16) (before [:, -8:])
  chunk.safetensors         chunk (B,8,6) = predict_action_chunk after torch.manual_seed(CHUNK_SEED) (normalized),
                            chunk_post = postprocessor(chunk), noise (B,8,16) = the x_0 it drew (replayed)
  tune_llm_visual/          with --tune-llm-visual: policy/ (model.safetensors a relative symlink to
                            ../../policy/model.safetensors, checked byte-identical), keys.json, loss.json,
                            grads.safetensors, draws.safetensors, intermediates.safetensors, chunk.safetensors
                            of the same build with tune_llm=True, tune_visual=True; grads.safetensors holds only
                            the gradients of the parameters frozen by default (the action head's are checked
                            bit-equal to ../grads.safetensors); the processed batch is checked equal, not rewritten

Why the gradients come from the eval-mode loss: train mode draws a dropout mask (bernoulli_ on the CPU
generator) at four sites in every vl_self_attention and DiT block, plus the state-dropout rand(B), interleaved
with the noise and Beta draws (loss.json rng.train_forward). A port reproduces train mode only by issuing the
same ATen RNG calls with the same shapes in the same order (or by replaying the saved masks); eval mode makes
the loss a function of the weights, the batch and the two saved draws (noise, time) only, so every gradient is
comparable on its own. The train-mode loss is still recorded, with its full draw list.

RNG draws of GR00TN17ActionHead.forward (groot_n1_7.py:567-631), in order; all on the default CPU generator
here (device="cpu"; on CUDA the rand / randn / dropout draws use the CUDA generator, Beta stays on the CPU one):
  1. train only: vl_self_attention dropouts, per block: attn1.to_out[1] (B,L,D), final_dropout (B,L,D),
     ff.net[1] (B,L,4D), ff.net[3] (B,L,D); each F.dropout(p=0.2) on CPU = empty_like(x).bernoulli_(0.8),
     div_(0.8), x * mask
  2. train only (state_dropout_prob 0.2 > 0): torch.rand(B) < 0.2 (state features zeroed where True)
  3. noise = torch.randn(action.shape, dtype=action.dtype)                        (B,8,16)
  4. t: Beta(tensor(1.5), tensor(1.0), validate_args=False).sample([B]) = torch._sample_dirichlet(
     tensor([1.5, 1.0]).expand(B, 2))[:, 0] on the CPU generator; t = (1 - s) * 0.999; t_bucket = (t*1000).long()
  5. train only: the same four dropouts in every DiT block (L = 1 + 8 tokens)
predict_action_chunk (eval): one torch.randn((B, action_horizon, max_action_dim), dtype=vl dtype) = x_0,
then 4 Euler steps without draws. The processors draw nothing here (training=False: built from dataset_stats
without dataset_meta, and no use_albumentations / processor state dropout). The Qwen3-VL backbone draws
nothing (attention dropout 0, frozen parts in eval), also with --tune-llm-visual. loss.json rng.* lists what
was actually observed (every ATen RNG op, via a TorchDispatchMode, with the nn.Dropout module it ran in).

Self-check (exit 1 on failure): the replayed eval draws equal the observed ones and x_t = (1-t)·noise + t·action
at the action encoder's input; traced forwards give the untraced losses bit for bit; policy/ reloads with
LeRobot (PreTrainedConfig.from_pretrained, GrootPolicy.from_pretrained(dir, config=...),
make_pre_post_processors(cfg, pretrained_path=dir)): same state dict (every entry bit-equal), same trainable
set, same processed batch, same eval loss and chunk. ~10 s on 1 thread.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import time as timer
from pathlib import Path

HERE = Path(__file__).resolve().parent
T_START = timer.time()

BASE_SEED, POLICY_SEED, BATCH_SEED, LOSS_SEED, CHUNK_SEED = 0, 0, 1, 123, 7
LOSS_GROOT_MD = {"train_loss": 0.871248722, "eval_loss": 1.091844320}  # groot.md §9.3 (1 CPU thread, fp32)
COSMOS = "nvidia/Cosmos-Reason2-2B"  # LeRobot's hard-coded tokenizer / processor / backbone name
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
            "<|video_pad|>"]
BPE_CORPUS = ["pick up the red cube", "place it in the bowl", "perform the task", "open the drawer", "user",
              "assistant", "stack the blocks"] * 4
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
IMAGE_PROCESSOR = {"image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen3VLProcessor",
                   "patch_size": 8, "merge_size": 2, "temporal_patch_size": 2, "image_mean": [0.5, 0.5, 0.5],
                   "image_std": [0.5, 0.5, 0.5], "size": {"shortest_edge": 256, "longest_edge": 16777216}}
BASE_PROCESSOR_KWARGS = {"image_target_size": [48, 48], "image_crop_size": [44, 44]}
# The GR00TN17Config of the base checkpoint (groot.md §9.2). select_layer 3 keeps LM layers 0..2; the DeepStack
# taps after vision blocks 1 and 3 feed LM layers 0 and 1, i.e. below the captured layer, as at full size.
GROOT_MODEL = dict(
    backbone_embedding_dim=64, select_layer=3, hidden_size=32, input_embedding_dim=48, max_state_dim=16,
    max_action_dim=16, action_horizon=8, max_seq_len=16, max_num_embodiments=16,
    diffusion_model_cfg={"positional_embeddings": None, "num_layers": 4, "num_attention_heads": 2,
                         "attention_head_dim": 24, "norm_type": "ada_norm", "dropout": 0.2, "final_dropout": True,
                         "output_dim": 32, "interleave_self_attention": True},
    vl_self_attention_cfg={"positional_embeddings": None, "num_layers": 1, "num_attention_heads": 2,
                           "attention_head_dim": 32, "dropout": 0.2, "final_dropout": True})
STATE_DIM, ACTION_DIM, BATCH, CHUNK = 6, 6, 2, 8
CAMERAS = {"observation.images.front": (3, 40, 56), "observation.images.wrist": (3, 40, 56)}
TASKS = ["Pick up the red cube!", "stack"]
STATS = {"observation.state": {"min": -2.0, "max": 2.0}, "action": {"min": -3.0, "max": 3.0}}
RNG_OPS = {"aten::bernoulli", "aten::bernoulli_", "aten::rand", "aten::randn", "aten::rand_like",
           "aten::randn_like", "aten::randint", "aten::randint_like", "aten::randperm", "aten::normal",
           "aten::normal_", "aten::uniform_", "aten::exponential_", "aten::geometric_", "aten::cauchy_",
           "aten::log_normal_", "aten::random_", "aten::multinomial", "aten::poisson", "aten::_standard_gamma",
           "aten::_sample_dirichlet", "aten::native_dropout", "aten::binomial"}


def log(msg: str) -> None:
    print(f"[groot_oracle] {msg}", flush=True)


class Fail(Exception):
    pass


def check(ok: bool, what: str) -> None:
    if not ok:
        raise Fail(what)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--tune-llm-visual", action="store_true",
                    help="also write OUT/tune_llm_visual/ (tune_llm=True, tune_visual=True)")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("LRHOST_ORACLE_THREADS", "1")))
    return ap.parse_args()


args = parse_args()
OUT = Path(args.out).resolve()
if OUT.exists() and any(OUT.iterdir()):
    if not (OUT / "hf_cache").exists():
        sys.exit(f"[groot_oracle] {OUT} is not empty and not an earlier groot_oracle output; refusing to clear it")
    shutil.rmtree(OUT)
OUT.mkdir(parents=True, exist_ok=True)
# Before huggingface_hub / transformers are imported (they read these at import time).
os.environ["HF_HUB_CACHE"] = str(OUT / "hf_cache")
os.environ["HF_HUB_OFFLINE"] = "1"
sys.path.insert(0, str(HERE))
import _lerobot_compat  # noqa: E402,F401  (offline hub; before any lerobot import)

try:
    import tree  # noqa: E402,F401  (dm-tree: GR00TN17.prepare_input)
except ImportError:
    print("[groot_oracle] dm-tree is missing (import tree): run scripts/setup-interop", file=sys.stderr)
    sys.exit(77)

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from torch.distributions import Beta  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

torch.set_num_threads(args.threads)
import transformers  # noqa: E402

transformers.logging.set_verbosity_error()  # GR00TN17's load report ("lm_head.weight MISSING": the tie, keys.json)

from lerobot.configs import FeatureType, PolicyFeature  # noqa: E402
from lerobot.configs.policies import PreTrainedConfig  # noqa: E402
from lerobot.policies.factory import make_pre_post_processors  # noqa: E402
import lerobot.policies.groot.groot_n1_7 as g17  # noqa: E402
from lerobot.policies.groot.configuration_groot import GrootConfig  # noqa: E402
from lerobot.policies.groot.modeling_groot import GrootPolicy  # noqa: E402
from lerobot.policies.groot.processor_groot import make_groot_pre_post_processors  # noqa: E402


# ----------------------------------------------------------------------------- offline construction
def make_hf_cache(root: Path):
    """The tiny tokenizer + image/video processor as the Hub cache entry of COSMOS; returns (tok, ids, snap)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.train_from_iterator(BPE_CORPUS, trainers.BpeTrainer(
        vocab_size=300, special_tokens=[], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
              for m in json.loads(bpe.to_str())["model"]["merges"]]
    tok = Qwen2Tokenizer(vocab=bpe.get_vocab(), merges=merges)
    tok.add_special_tokens({"additional_special_tokens": SPECIALS[1:]})
    tok.chat_template = CHAT_TEMPLATE
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIALS}
    repo = root / ("models--" + COSMOS.replace("/", "--"))
    snap = repo / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    tok.save_pretrained(str(snap))
    (snap / "preprocessor_config.json").write_text(json.dumps(IMAGE_PROCESSOR, indent=2))
    (snap / "video_preprocessor_config.json").write_text(
        json.dumps({**IMAGE_PROCESSOR, "video_processor_type": "Qwen3VLVideoProcessor"}, indent=2))
    return tok, ids, snap


def tiny_qwen3_vl_config(n_vocab: int, ids: dict):
    from transformers import Qwen3VLConfig

    return Qwen3VLConfig(
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
        text_config=dict(attention_bias=False, head_dim=16, hidden_act="silu", hidden_size=64, intermediate_size=128,
                         max_position_embeddings=4096, model_type="qwen3_vl_text", num_attention_heads=4,
                         num_hidden_layers=4, num_key_value_heads=2, rms_norm_eps=1e-6, rope_theta=5000000,
                         tie_word_embeddings=True, vocab_size=n_vocab,
                         rope_scaling={"mrope_interleaved": True, "mrope_section": [4, 2, 2], "rope_type": "default"},
                         bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"]),
        vision_config=dict(deepstack_visual_indexes=[1, 3], depth=4, hidden_act="gelu_pytorch_tanh", hidden_size=32,
                           in_channels=3, intermediate_size=64, model_type="qwen3_vl", num_heads=2,
                           num_position_embeddings=64, out_hidden_size=64, patch_size=8, spatial_merge_size=2,
                           temporal_patch_size=2))


def make_base(base: Path) -> None:
    torch.manual_seed(BASE_SEED)
    g17.GR00TN17(g17.GR00TN17Config(**GROOT_MODEL), load_backbone_weights=False).save_pretrained(str(base))
    (base / "processor_config.json").write_text(json.dumps({"processor_kwargs": BASE_PROCESSOR_KWARGS}, indent=2))


def make_config(base: Path, tune: bool) -> GrootConfig:
    extra = dict(tune_llm=True, tune_visual=True) if tune else {}
    return GrootConfig(
        base_model_path=str(base), chunk_size=CHUNK, n_action_steps=CHUNK, max_state_dim=16, max_action_dim=16,
        device="cpu", use_bf16=False,
        input_features={**{k: PolicyFeature(FeatureType.VISUAL, s) for k, s in CAMERAS.items()},
                        "observation.state": PolicyFeature(FeatureType.STATE, (STATE_DIM,))},
        output_features={"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}, **extra)


def dataset_stats() -> dict:
    dims = {"observation.state": STATE_DIM, "action": ACTION_DIM}
    return {k: {s: v * torch.ones(dims[k]) for s, v in d.items()} for k, d in STATS.items()}


def raw_batch() -> dict:
    g = torch.Generator().manual_seed(BATCH_SEED)
    batch = {k: torch.rand(BATCH, *s, generator=g) for k, s in CAMERAS.items()}
    batch["observation.state"] = torch.randn(BATCH, STATE_DIM, generator=g)
    batch["action"] = torch.randn(BATCH, CHUNK, ACTION_DIM, generator=g)
    batch["action_is_pad"] = torch.tensor([[False] * CHUNK, [False] * (CHUNK - 2) + [True] * 2])
    batch["task"] = list(TASKS)
    return batch


def preprocess(pre, batch: dict) -> dict:
    return pre({k: (v.clone() if isinstance(v, torch.Tensor) else list(v) if isinstance(v, list) else v)
                for k, v in batch.items()})


# ------------------------------------------------------------------------------------------ RNG trace
class RngTrace(TorchDispatchMode):
    """Records every ATen RNG op (name, output shape/dtype/device, scalar args, the nn.Dropout module it ran in)
    and a copy of its output."""

    def __init__(self, policy: torch.nn.Module):
        super().__init__()
        self.events, self.outputs, self._stack, self._handles = [], [], [], []
        for name, m in policy.named_modules():
            if isinstance(m, torch.nn.Dropout):
                self._handles.append(m.register_forward_pre_hook(self._enter(name)))
                self._handles.append(m.register_forward_hook(self._leave))

    def _enter(self, name):
        def hook(_m, _i):
            self._stack.append(name)  # returns None: the input is unchanged
        return hook

    def _leave(self, _m, _i, _o):
        self._stack.pop()  # returns None: the output is unchanged

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        return super().__exit__(*exc)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func._schema.name in RNG_OPS:
            t = out[0] if isinstance(out, (tuple, list)) else out
            scalars = [a for a in args if isinstance(a, (int, float, bool))]
            shapes = [list(a.shape) for a in args if isinstance(a, torch.Tensor)]
            event = {"op": str(func), "shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."),
                     "device": str(t.device), "site": self._stack[-1] if self._stack else None}
            if scalars:
                event["scalar_args"] = scalars
            if shapes:
                event["tensor_arg_shapes"] = shapes
            if func._schema.name == "aten::_sample_dirichlet":
                event["concentration"] = args[0][0].tolist()
            self.events.append(event)
            self.outputs.append(t.detach().clone())
        return out


def describe(events: list, prefix: str) -> list:
    """Names the draws that are not dropout masks and gives each its tensor name in draws.safetensors."""
    names = {"aten::rand": "state dropout: torch.rand(B) < state_dropout_prob",
             "aten::randn": "flow-matching noise: torch.randn(action.shape)",
             "aten::_sample_dirichlet": "time: Beta(1.5, 1.0).sample([B]) = _sample_dirichlet([1.5, 1.0] "
                                        "expanded to (B, 2))[:, 0]; t = (1 - s) * 0.999"}
    for i, e in enumerate(events):
        e["tensor"] = f"{prefix}.{i:02d}"
        if e["site"] is None:
            e["site"] = names.get("aten::" + e["op"].split(".")[1], "?")
        else:
            e["site"] = "nn.Dropout " + e["site"]
    return events


def traced(policy, fn):
    with RngTrace(policy) as tr:
        result = fn()
    return result, tr


# -------------------------------------------------------------------------------------------- protocol
def run_protocol(policy, post, proc: dict) -> dict:
    """Eval loss + grads (with intermediates), train loss, chunk; each forward once plain, once traced."""
    gm = policy._groot_model
    head = gm.action_head
    res = {}

    # eval-mode loss and gradients
    policy.eval()
    policy.zero_grad(set_to_none=True)
    inter, hooks = {}, []

    def keep(name, fn):
        return lambda *a, **k: inter.__setitem__(name, fn(*a, **k)) if name not in inter else None

    hooks.append(gm.backbone.model.register_forward_pre_hook(
        keep("position_ids", lambda _m, _a, kw: kw["position_ids"].detach().clone()), with_kwargs=True))
    hooks.append(gm.backbone.register_forward_hook(keep("backbone", lambda _m, _i, o: {
        "backbone_features": o["backbone_features"].detach().clone(),
        "backbone_attention_mask": o["backbone_attention_mask"].clone(), "image_mask": o["image_mask"].clone()})))
    hooks.append(head.vl_self_attention.register_forward_hook(
        keep("vl_embeds", lambda _m, _i, o: o.detach().clone())))
    hooks.append(head.action_encoder.register_forward_hook(
        keep("encoder_in", lambda _m, i, _o: (i[0].detach().clone(), i[1].clone()))))
    hooks.append(head.action_decoder.register_forward_hook(
        keep("decoder_out", lambda _m, _i, o: o.detach().clone())))
    torch.manual_seed(LOSS_SEED)
    loss, _ = policy.forward(proc)
    for h in hooks:
        h.remove()
    loss.backward()
    res["eval_loss"] = loss.detach().clone()
    trainable = [(n, p) for n, p in policy.named_parameters() if p.requires_grad]
    res["grads"] = {n: p.grad.detach().clone() for n, p in trainable if p.grad is not None}
    res["no_grad"] = [n for n, p in trainable if p.grad is None]
    res["zero_grad"] = [n for n, g in res["grads"].items() if not g.any()]
    policy.zero_grad(set_to_none=True)
    with torch.no_grad():
        (l2, _), tr = traced(policy, lambda: (torch.manual_seed(LOSS_SEED), policy.forward(proc))[1])
    check(torch.equal(l2, res["eval_loss"]), f"traced eval loss {l2.item()} != {res['eval_loss'].item()}")
    res["rng_eval"], res["rng_eval_out"] = describe(tr.events, "eval"), tr.outputs

    # replay of the eval draws (what a port feeds its head)
    action = proc["action"].to(torch.float32)
    torch.manual_seed(LOSS_SEED)
    noise = torch.randn(action.shape, dtype=action.dtype)
    s = Beta(torch.tensor(1.5), torch.tensor(1.0), validate_args=False).sample([action.shape[0]])
    t = (1 - s) * head.config.noise_s
    t_bucket = (t * head.num_timestep_buckets).long()
    ops = [e["op"] for e in res["rng_eval"]]
    check(ops == ["aten.randn.default", "aten._sample_dirichlet.default"], f"eval forward RNG ops {ops}")
    check(torch.equal(tr.outputs[0], noise) and torch.equal(tr.outputs[1][:, 0], s), "replayed eval draws differ")
    x_t, bucket = inter["encoder_in"]
    check(torch.equal(bucket, t_bucket), f"t_bucket {bucket.tolist()} != replayed {t_bucket.tolist()}")
    check(torch.equal(x_t, (1 - t[:, None, None]) * noise + t[:, None, None] * action), "x_t != (1-t)noise + t·action")
    res["draws"] = {"eval.noise": noise, "eval.time": t, "eval.t_bucket": t_bucket}
    res["intermediates"] = {"position_ids": inter["position_ids"], **inter["backbone"], "vl_embeds": inter["vl_embeds"],
                            "action_encoder_in": x_t, "t_bucket": bucket, "decoder_out": inter["decoder_out"]}

    # train-mode loss (grad enabled as in training; no backward)
    policy.train()
    torch.manual_seed(LOSS_SEED)
    res["train_loss"] = policy.forward(proc)[0].detach().clone()
    (l3, _), tr = traced(policy, lambda: (torch.manual_seed(LOSS_SEED), policy.forward(proc))[1])
    check(torch.equal(l3.detach(), res["train_loss"]), "traced train loss differs")
    res["rng_train"], res["rng_train_out"] = describe(tr.events, "train"), tr.outputs
    policy.zero_grad(set_to_none=True)

    # sampling (predict_action_chunk puts the policy in eval mode itself)
    torch.manual_seed(CHUNK_SEED)
    res["chunk"] = policy.predict_action_chunk(proc)
    res["chunk_post"] = post(res["chunk"].clone())
    c2, tr = traced(policy, lambda: (torch.manual_seed(CHUNK_SEED), policy.predict_action_chunk(proc))[1])
    check(torch.equal(c2, res["chunk"]), "traced chunk differs")
    res["rng_chunk"], res["rng_chunk_out"] = describe(tr.events, "chunk"), tr.outputs
    torch.manual_seed(CHUNK_SEED)
    x0 = torch.randn(BATCH, head.config.action_horizon, head.action_dim)
    check([e["op"] for e in res["rng_chunk"]] == ["aten.randn.default"] and torch.equal(tr.outputs[0], x0),
          "chunk draws: expected one randn (B, horizon, max_action_dim)")
    res["chunk_noise"] = x0
    return res


def state_dict_table(policy, model_file: Path) -> dict:
    from safetensors import safe_open

    with safe_open(str(model_file), framework="pt") as f:
        saved = set(f.keys())
    table, first = {}, {}
    for k, v in policy.state_dict(keep_vars=True).items():
        e = {"shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch."),
             "requires_grad": bool(v.requires_grad), "in_model_safetensors": k in saved}
        ptr = (v.data_ptr(), tuple(v.shape))
        if ptr in first:
            e["tied_to"] = first[ptr]
            table[first[ptr]]["tied_to"] = k
        else:
            first[ptr] = k
        table[k] = e
    return table


def counts(policy) -> dict:
    ps = list(policy.named_parameters())
    tr = [p for _, p in ps if p.requires_grad]
    return {"parameters": sum(p.numel() for _, p in ps), "parameter_tensors": len(ps),
            "trainable_parameters": sum(p.numel() for p in tr), "trainable_tensors": len(tr),
            "state_dict_keys": len(policy.state_dict())}


def write_variant(d: Path, policy, pre, post, res: dict, tune: bool, share_weights_with: Path | None,
                  ref_grads: dict | None = None) -> dict:
    """Writes d/policy and d/*.{json,safetensors}. share_weights_with: model.safetensors must be byte-equal to
    that folder's and becomes a relative symlink to it; ref_grads: gradients that must be bit-equal to this
    run's, which are then not written again (the default run's action-head gradients)."""
    pdir = d / "policy"
    policy.save_pretrained(str(pdir))
    pre.save_pretrained(str(pdir))
    post.save_pretrained(str(pdir))
    if share_weights_with is not None:
        mine, theirs = pdir / "model.safetensors", share_weights_with / "model.safetensors"
        check(mine.read_bytes() == theirs.read_bytes(), f"{mine} differs from {theirs}")
        mine.unlink()
        mine.symlink_to(os.path.relpath(theirs, pdir))
    keys = state_dict_table(policy, pdir / "model.safetensors")
    (d / "keys.json").write_text(json.dumps(keys, indent=1))
    grads, shared = dict(res["grads"]), []
    for k, g in (ref_grads or {}).items():
        check(k in grads and torch.equal(grads[k], g), f"gradient of {k} differs from the default run's")
        shared.append(grads.pop(k))
    save_file({k: v.contiguous() for k, v in grads.items()}, str(d / "grads.safetensors"))
    draws = dict(res["draws"])
    for kind in ("eval", "train", "chunk"):
        for e, t in zip(res[f"rng_{kind}"], res[f"rng_{kind}_out"]):
            if e["op"].startswith("aten.bernoulli") and bool(((t == 0) | (t == 1)).all()):
                t = t.to(torch.bool)  # a 0/1 mask (the op's output dtype is in loss.json)
                e["stored_as"] = "bool"
            draws[e["tensor"]] = t.contiguous()
    save_file(draws, str(d / "draws.safetensors"))
    save_file({k: v.contiguous() for k, v in res["intermediates"].items()}, str(d / "intermediates.safetensors"))
    save_file({"chunk": res["chunk"].contiguous(), "chunk_post": res["chunk_post"].contiguous(),
               "noise": res["chunk_noise"]}, str(d / "chunk.safetensors"))
    summary = {
        "eval_loss": res["eval_loss"].item(), "train_loss": res["train_loss"].item(),
        "eval_loss_note": f"policy.eval(); torch.manual_seed({LOSS_SEED}); policy.forward(processed_batch)[0] "
                          "(no dropout, no state dropout; draws = draws.safetensors eval.*); grads.safetensors "
                          "is its backward",
        "train_loss_note": f"policy.train(); torch.manual_seed({LOSS_SEED}); policy.forward(processed_batch)[0] "
                           "(dropout p 0.2, state dropout p 0.2; draws = rng.train_forward)",
        "dtype": "float32", "use_bf16": False, "threads": args.threads,
        "tune_llm": tune, "tune_visual": tune, "seeds": {"base_init": BASE_SEED, "policy": POLICY_SEED,
                                                          "raw_batch": BATCH_SEED, "loss": LOSS_SEED,
                                                          "chunk": CHUNK_SEED},
        "counts": {**counts(policy), "gradients": len(res["grads"]), "gradients_in_grads_safetensors": len(grads)},
        "trainable_without_grad": res["no_grad"], "all_zero_grads": res["zero_grad"],
        "rng": {"order_note": "ATen RNG ops in call order, all on the default CPU generator (device cpu); "
                              "'tensor' names the op's output in draws.safetensors; dropout = "
                              "empty_like(x).bernoulli_(0.8) then div_(0.8) then x * mask",
                "eval_forward": res["rng_eval"], "train_forward": res["rng_train"],
                "predict_action_chunk": res["rng_chunk"]},
        "eval_time": res["draws"]["eval.time"].tolist(), "eval_t_bucket": res["draws"]["eval.t_bucket"].tolist(),
        "versions": _lerobot_compat.versions() | {"transformers": __import__("transformers").__version__,
                                                   "diffusers": __import__("diffusers").__version__},
    }
    if ref_grads:
        summary["grads_note"] = (f"grads.safetensors holds the {len(grads)} gradients of parameters frozen by "
                                 f"default; the other {len(shared)} are bit-equal to ../grads.safetensors "
                                 "(checked) and not repeated")
    if not tune:
        summary["groot_md_9_3"] = {k: {"expected": v, "got": summary[k], "abs_diff": abs(summary[k] - v)}
                                   for k, v in LOSS_GROOT_MD.items()}
    (d / "loss.json").write_text(json.dumps(summary, indent=1))
    return summary


def tensors_equal(a: dict, b: dict) -> list[str]:
    bad = [k for k in a if isinstance(a[k], torch.Tensor) and not (
        k in b and isinstance(b[k], torch.Tensor) and a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]))]
    return bad + [k for k in b if isinstance(b[k], torch.Tensor) and k not in a]


def verify_reload(pdir: Path, policy, batch: dict, proc: dict, res: dict) -> None:
    cfg = PreTrainedConfig.from_pretrained(str(pdir))
    with contextlib.redirect_stdout(io.StringIO()):  # "Loading weights from local directory"
        policy2 = GrootPolicy.from_pretrained(str(pdir), config=cfg)
    pre2, post2 = make_pre_post_processors(cfg, pretrained_path=str(pdir))
    sd1, sd2 = policy.state_dict(), policy2.state_dict()
    check(list(sd1) == list(sd2), "reloaded state_dict keys differ")
    bad = [k for k in sd1 if sd1[k].dtype != sd2[k].dtype or not torch.equal(sd1[k], sd2[k])]
    check(not bad, f"reloaded state_dict differs at {bad[:5]}")
    tr1 = [n for n, p in policy.named_parameters() if p.requires_grad]
    tr2 = [n for n, p in policy2.named_parameters() if p.requires_grad]
    check(tr1 == tr2, "reloaded trainable set differs")
    proc2 = preprocess(pre2, batch)
    bad = tensors_equal(proc, proc2)
    check(not bad, f"reloaded preprocessor output differs at {bad}")
    policy2.eval()
    torch.manual_seed(LOSS_SEED)
    with torch.no_grad():
        l2 = policy2.forward(proc2)[0]
    check(torch.equal(l2, res["eval_loss"]), f"reloaded eval loss {l2.item():.9f} != {res['eval_loss'].item():.9f}")
    torch.manual_seed(CHUNK_SEED)
    c2 = policy2.predict_action_chunk(proc2)
    check(torch.equal(c2, res["chunk"]), "reloaded chunk differs")
    check(torch.equal(post2(c2.clone()), res["chunk_post"]), "reloaded postprocessor output differs")
    log(f"reload {pdir.relative_to(OUT)}: {len(sd1)} state_dict entries bit-equal, processed batch, eval loss and "
        f"chunk equal")


def build_variant(base: Path, tune: bool):
    cfg = make_config(base, tune)
    torch.manual_seed(POLICY_SEED)
    policy = GrootPolicy(cfg)
    pre, post = make_groot_pre_post_processors(cfg, dataset_stats=dataset_stats())
    return policy, pre, post


def main() -> int:
    tok, ids, snap = make_hf_cache(OUT / "hf_cache")
    g17._cosmos_reason2_qwen3_vl_config = lambda: tiny_qwen3_vl_config(len(tok), ids)  # the one patch
    (snap / "config.json").write_text(json.dumps(g17._cosmos_reason2_qwen3_vl_config().to_dict(), indent=2))
    base = OUT / "base"
    make_base(base)

    batch = raw_batch()
    save_file({k: v.contiguous() for k, v in batch.items() if isinstance(v, torch.Tensor)},
              str(OUT / "raw_batch.safetensors"))
    (OUT / "raw_batch.json").write_text(json.dumps({"task": batch["task"], "seed": BATCH_SEED, "generator":
        "torch.Generator().manual_seed(seed): rand front, rand wrist, randn state, randn action", "dataset_stats":
        STATS}, indent=1))

    policy, pre, post = build_variant(base, tune=False)
    proc = preprocess(pre, batch)
    tensors = {k: v.contiguous() for k, v in proc.items() if isinstance(v, torch.Tensor)}
    save_file(tensors, str(OUT / "processed_batch.safetensors"))
    other = {k: v for k, v in proc.items() if not isinstance(v, torch.Tensor)}
    (OUT / "processed_batch.json").write_text(json.dumps({
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch.")}
                    for k, v in tensors.items()},
        "non_tensor": {k: v if isinstance(v, (str, int, float, bool, list, dict, type(None))) else repr(v)
                       for k, v in other.items()},
        "prompts": [tok.decode(row[m.bool()].tolist()) for row, m in zip(proc["input_ids"], proc["attention_mask"])],
        "token_ids": {t: i for t, i in ids.items()}, "vocab_size": len(tok)}, indent=1, default=repr))

    res = run_protocol(policy, post, proc)
    summary = write_variant(OUT, policy, pre, post, res, tune=False, share_weights_with=None)
    verify_reload(OUT / "policy", policy, batch, proc, res)
    c = summary["counts"]
    log(f"default (action head trainable): {c['parameters']:,} params / {c['parameter_tensors']} tensors, "
        f"{c['trainable_parameters']:,} / {c['trainable_tensors']} trainable, {c['gradients']} grads "
        f"({len(res['zero_grad'])} all-zero, {len(res['no_grad'])} trainable without grad)")
    log(f"input_ids {tuple(proc['input_ids'].shape)}, pixel_values {tuple(proc['pixel_values'].shape)}, "
        f"chunk {tuple(res['chunk'].shape)}; rng draws eval/train/chunk = {len(res['rng_eval'])}/"
        f"{len(res['rng_train'])}/{len(res['rng_chunk'])}")
    for k, v in summary["groot_md_9_3"].items():
        log(f"{k} {v['got']:.9f} (groot.md §9.3: {v['expected']:.9f}, |diff| {v['abs_diff']:.2g})")

    if args.tune_llm_visual:
        d = OUT / "tune_llm_visual"
        policy_t, pre_t, post_t = build_variant(base, tune=True)
        proc_t = preprocess(pre_t, batch)
        bad = tensors_equal(proc, proc_t)
        check(not bad, f"tune_llm_visual processed batch differs at {bad}")
        res_t = run_protocol(policy_t, post_t, proc_t)
        summary_t = write_variant(d, policy_t, pre_t, post_t, res_t, tune=True, share_weights_with=OUT / "policy",
                                  ref_grads=res["grads"])
        verify_reload(d / "policy", policy_t, batch, proc_t, res_t)
        c = summary_t["counts"]
        log(f"tune_llm_visual: {c['trainable_parameters']:,} / {c['trainable_tensors']} trainable, "
            f"{c['gradients']} grads, without grad: {res_t['no_grad']}; eval_loss {summary_t['eval_loss']:.9f}, "
            f"train_loss {summary_t['train_loss']:.9f}, rng draws train {len(res_t['rng_train'])}")

    size = sum(f.stat().st_size for f in OUT.rglob("*") if f.is_file() and not f.is_symlink())
    log(f"wrote {OUT} ({size / 1e6:.2f} MB) in {timer.time() - T_START:.1f} s (imports included) on "
        f"{args.threads} thread(s)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Fail as e:
        log(f"FAILED: {e}")
        sys.exit(1)
