"""Reference outputs of LeRobot 0.6.1's PiGemma / PaliGemma blocks (lerobot/policies/pi_gemma.py over
transformers 5.5.4's Gemma, SigLIP and PaliGemma), for tests/interop/gemma_blocks_check.cpp (see
gemma_blocks_interop.sh).

    python gemma_blocks_oracle.py OUT_DIR

The models are built the way PaliGemmaWithExpertModel.__init__ builds them (modeling_pi0.py), at a
tiny geometry: PaliGemma = SigLIP (width 32, 2 layers, 2 heads, patch 8, image 32) + projector +
PiGemma text model (width 64, MLP 128, 2 layers, 8 query heads x 16, 1 KV head, vocab 64); action
expert = PiGemma with adaRMS (width 32, MLP 64, same heads, cond 32). Weights are re-drawn so that
every norm weight and adaRMS dense is non-zero. Writes:
  OUT_DIR/config.json               PaliGemma config.json (vision_config, text_config)
  OUT_DIR/expert_config.json        the expert's GemmaConfig (use_adarms, adarms_cond_dim)
  OUT_DIR/model.safetensors         fp32 weights under LeRobot's keys (model.paligemma_with_expert.…)
  OUT_DIR/model_bf16.safetensors    the same after LeRobot's to_bfloat16_for_selected_params (mixed)
  OUT_DIR/reference.safetensors     inputs and outputs: fp32 items, and bf16.* items from the bf16 model
"""

import copy
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import CONFIG_MAPPING

from lerobot.policies.pi05.modeling_pi05 import PaliGemmaWithExpertModel, compute_layer_complete
from lerobot.policies.pi_gemma import PaliGemmaForConditionalGenerationWithPiGemma, PiGemmaForCausalLM
from lerobot.utils.constants import OPENPI_ATTENTION_MASK_VALUE

B, P, S = 2, 7, 5  # batch, prefix length, suffix length
T = P + S
ROOT = "model.paligemma_with_expert."


def build():
    vlm = CONFIG_MAPPING["paligemma"]()
    vlm._vocab_size = 64
    vlm.image_token_index = 64
    t = vlm.text_config
    t.hidden_size, t.intermediate_size, t.num_attention_heads, t.head_dim = 64, 128, 8, 16
    t.num_hidden_layers, t.num_key_value_heads, t.vocab_size = 2, 1, 64
    t.hidden_activation = "gelu_pytorch_tanh"
    t.dtype = "float32"
    t.use_adarms, t.adarms_cond_dim = False, None
    v = vlm.vision_config
    v.hidden_size, v.intermediate_size, v.num_hidden_layers, v.num_attention_heads = 32, 64, 2, 2
    v.patch_size, v.image_size, v.projection_dim = 8, 32, 64
    v.dtype = "float32"
    v._attn_implementation = "sdpa"
    expert = CONFIG_MAPPING["gemma"](
        head_dim=16, hidden_size=32, intermediate_size=64, num_attention_heads=8, num_hidden_layers=2,
        num_key_value_heads=1, vocab_size=64, hidden_activation="gelu_pytorch_tanh", dtype="float32",
        use_adarms=True, adarms_cond_dim=32,
    )
    paligemma = PaliGemmaForConditionalGenerationWithPiGemma(config=vlm)
    gemma_expert = PiGemmaForCausalLM(config=expert)
    gemma_expert.model.embed_tokens = None
    for m in (paligemma.model.language_model, gemma_expert.model):
        m.config._attn_implementation = "eager"  # what pi0/pi05 force
    paligemma.model.vision_tower.config._attn_implementation = "sdpa"
    return vlm, expert, paligemma, gemma_expert


def redraw(module):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() == 1 and ("norm" in name or "layernorm" in name):
                p.copy_(torch.randn_like(p) * 0.3)
            elif p.dim() == 1:
                p.copy_(torch.randn_like(p) * 0.1)
            elif "embed_tokens" in name or "position_embedding" in name or "lm_head" in name:
                p.copy_(torch.randn_like(p) * 0.5)
            else:
                fan_in = p[0].numel()
                p.copy_(torch.randn_like(p) * fan_in**-0.5)


def state_dict(paligemma, gemma_expert):
    out = {}
    for k, t in paligemma.state_dict().items():
        out[ROOT + "paligemma." + k] = t.contiguous().clone()
    for k, t in gemma_expert.state_dict().items():
        out[ROOT + "gemma_expert." + k] = t.contiguous().clone()
    return out


def lerobot_bf16(paligemma, gemma_expert):
    """PaliGemmaWithExpertModel.to_bfloat16_for_selected_params on copies of the two parts."""
    holder = torch.nn.Module()
    holder.paligemma = copy.deepcopy(paligemma)
    holder.gemma_expert = copy.deepcopy(gemma_expert)
    PaliGemmaWithExpertModel.to_bfloat16_for_selected_params(holder, "bfloat16")
    return holder.paligemma, holder.gemma_expert


def inputs():
    g = torch.Generator().manual_seed(1)
    pad = torch.ones(B, T, dtype=torch.bool)
    pad[1, 4:P] = False  # padded prefix tokens in row 1 (their query rows are fully masked)
    ar = torch.zeros(B, T, dtype=torch.long)
    ar[:, P] = 1  # suffix: its own block (pi05: actions attend bidirectionally)
    cum = ar.cumsum(1)
    allowed = (cum[:, None, :] <= cum[:, :, None]) & pad[:, None, :] & pad[:, :, None]
    positions = pad.long().cumsum(1) - 1
    positions[0] += 990  # large positions: where bf16-rounded inv_freq moves the angles most
    mask = torch.where(allowed[:, None], 0.0, OPENPI_ATTENTION_MASK_VALUE).to(torch.float32)
    return {
        "ids": torch.randint(0, 64, (B, P), generator=g),
        "pixels": torch.rand(B, 3, 32, 32, generator=g) * 2 - 1,
        "allowed": allowed,
        "mask": mask,
        "positions": positions,
        "x_vlm": torch.randn(B, T, 64, generator=g),
        "x_expert": torch.randn(B, T, 32, generator=g),
        "prefix": torch.randn(B, P, 64, generator=g),
        "suffix": torch.randn(B, S, 32, generator=g),
        "cond": torch.randn(B, 32, generator=g),
    }


def outputs(paligemma, gemma_expert, x, dtype):
    lm, ex = paligemma.model.language_model, gemma_expert.model
    cast = lambda t: t.to(dtype)  # noqa: E731
    out = {}
    with torch.no_grad():
        out["embed"] = lm.embed_tokens(x["ids"])
        if dtype == torch.float32:
            out["vision_hidden"] = paligemma.model.vision_tower(x["pixels"]).last_hidden_state
            out["image_features"] = paligemma.model.get_image_features(x["pixels"]).pooler_output
        cos, sin = lm.rotary_emb(cast(x["x_vlm"]), x["positions"])
        out["rope_cos"], out["rope_sin"] = cos, sin
        out["inv_freq"] = lm.rotary_emb.inv_freq.float()
        out["norm_plain"] = lm.layers[0].input_layernorm(cast(x["x_vlm"]))[0]
        out["norm_ada"], out["norm_ada_gate"] = ex.layers[0].input_layernorm(cast(x["x_expert"]), cond=x["cond"])
        layer_args = dict(attention_mask=x["mask"], position_ids=x["positions"])
        out["vlm_layer0"] = lm.layers[0](cast(x["x_vlm"]), position_embeddings=(cos, sin), **layer_args)
        ecos, esin = ex.rotary_emb(cast(x["x_expert"]), x["positions"])
        out["expert_layer0"] = ex.layers[0](cast(x["x_expert"]), position_embeddings=(ecos, esin),
                                            adarms_cond=x["cond"], **layer_args)
        out["vlm_model"] = lm(inputs_embeds=x["x_vlm"], use_cache=False, **layer_args).last_hidden_state
        out["expert_model"] = ex(inputs_embeds=x["x_expert"], use_cache=False, adarms_cond=x["cond"],
                                 **layer_args).last_hidden_state
        # pi05's training path: both streams through one attention, layer 0 then layer 1.
        streams = [cast(x["prefix"]), cast(x["suffix"])]
        for i in range(2):
            streams = compute_layer_complete(streams, x["mask"], x["positions"], [None, x["cond"]],
                                             [lm.layers[i], ex.layers[i]], lm.rotary_emb)
            out[f"joint{i}_prefix"], out[f"joint{i}_suffix"] = streams
    return out


def main(out_dir: Path):
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    vlm, expert, paligemma, gemma_expert = build()
    redraw(paligemma)
    redraw(gemma_expert)
    paligemma.eval()
    gemma_expert.eval()
    (out_dir / "config.json").write_text(json.dumps(vlm.to_dict(), indent=1, default=str))
    (out_dir / "expert_config.json").write_text(json.dumps(expert.to_dict(), indent=1, default=str))
    save_file(state_dict(paligemma, gemma_expert), str(out_dir / "model.safetensors"))
    pali16, expert16 = lerobot_bf16(paligemma, gemma_expert)
    save_file(state_dict(pali16, expert16), str(out_dir / "model_bf16.safetensors"))

    x = inputs()
    ref = dict(x)
    ref.update(outputs(paligemma, gemma_expert, x, torch.float32))
    ref.update({"bf16." + k: v for k, v in outputs(pali16, expert16, x, torch.bfloat16).items()})
    ref = {k: v.contiguous() for k, v in ref.items()}
    save_file(ref, str(out_dir / "reference.safetensors"))
    print(f"wrote {len(ref)} reference tensors to {out_dir}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
