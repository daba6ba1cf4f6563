"""Reference outputs of transformers' Llama decoder parts and LeRobot SmolVLA's RoPE / eager attention,
for tests/interop/vlm_decoder_check.cpp (see vlm_decoder_interop.sh).

    python vlm_decoder_oracle.py OUT_DIR

Writes, per case (plain: 3 layers, no biases; bias: 1 layer with attention and MLP biases):
  OUT_DIR/<case>/config.json        a SmolVLM-style config.json whose text_config is the LlamaConfig
  OUT_DIR/<case>/model.safetensors  LlamaModel weights under `model.text_model.` (fp32, fixed seed)
  OUT_DIR/<case>/reference.safetensors inputs and reference outputs (names below)
Inputs run at arbitrary per-row position ids with a custom mask (padding + causal + a prefix-LM
block) that leaves no query row fully masked; SmolVLA's eager attention also runs on a mask with
fully masked rows (left padding), where it gives a uniform softmax.
"""

import json
import sys
import types
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaModel
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from lerobot.policies.smolvla.smolvlm_with_expert import SmolVLMWithExpertModel, apply_rope

B, L = 3, 7


def masks():
    causal = torch.ones(L, L, dtype=torch.bool).tril()
    pad = torch.ones(B, L, dtype=torch.bool)
    pad[1, 5:] = False  # right padding: every query still sees key 0
    mask = causal[None].repeat(B, 1, 1) & pad[:, None, :]
    mask[2, :3, :3] = True  # prefix-LM block (SmolVLA's bidirectional prefix)
    full = causal[None].repeat(B, 1, 1) & pad[:, None, :]
    full_pad = torch.ones(B, L, dtype=torch.bool)
    full_pad[0, :2] = False  # left padding: queries 0 and 1 of row 0 see nothing
    fully_masked = causal[None].repeat(B, 1, 1) & full_pad[:, None, :] & full_pad[:, :, None]
    assert (mask.sum(-1) > 0).all() and (fully_masked.sum(-1) == 0).any()
    return mask, fully_masked


def positions():
    return torch.tensor(
        [[0, 1, 2, 3, 4, 5, 6], [5, 6, 9, 10, 11, 30, 31], [100, 101, 102, 250, 251, 252, 1000]], dtype=torch.long
    )


def run_layers(model, x, pos, mask4, implementation):
    """LlamaModel.forward's layer loop with our own 4-D mask (sdpa: boolean; eager: additive)."""
    model.config._attn_implementation = implementation
    rope = model.rotary_emb(x, pos)
    outs = []
    h = x
    for layer in model.layers:
        h = layer(h, attention_mask=mask4, position_ids=pos, position_embeddings=rope)
        outs.append(h)
    return outs, model.norm(h)


def additive(mask4, dtype):
    return torch.zeros(mask4.shape, dtype=dtype).masked_fill(~mask4, torch.finfo(dtype).min)


def smolvla_eager(heads, kv_heads, mask, q, k, v):
    owner = types.SimpleNamespace(num_attention_heads=heads, num_key_value_heads=kv_heads)
    return SmolVLMWithExpertModel.eager_attention_forward(owner, mask, q.shape[0], q.shape[-1], q, k, v)


def write_case(out: Path, name: str, layers: int, bias: bool, seed: int):
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=50, hidden_size=64, intermediate_size=96, num_hidden_layers=layers, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-5, rope_parameters={"rope_type": "default",
        "rope_theta": 100000.0}, attention_bias=bias, mlp_bias=bias, max_position_embeddings=2048,
    )
    config._attn_implementation = "sdpa"
    model = LlamaModel(config).eval()
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if pname.endswith("norm.weight") or "layernorm" in pname:
                p.copy_(1 + 0.2 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.2)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    text = json.loads(config.to_json_string())
    (folder / "config.json").write_text(json.dumps({"model_type": "smolvlm", "text_config": text}, indent=2))
    save_file({f"model.text_model.{k}": v.contiguous() for k, v in model.state_dict().items()},
              str(folder / "model.safetensors"))

    mask, fully_masked = masks()
    pos = positions()
    ref = {"positions": pos, "mask": mask, "fully_masked": fully_masked}
    x = torch.randn(B, L, config.hidden_size)
    ref["x"] = x
    H, KV, D = config.num_attention_heads, config.num_key_value_heads, config.head_dim
    with torch.no_grad():
        # RoPE: transformers' tables and rotation, SmolVLA's apply_rope (its default base 10,000 and the
        # config's base), on q/k in lrhost's (B, L, heads, D) layout.
        cos, sin = model.rotary_emb(x, pos)
        ref["rope_cos"], ref["rope_sin"] = cos, sin
        q = torch.randn(B, L, H, D)
        k = torch.randn(B, L, KV, D)
        v = torch.randn(B, L, KV, D)
        ref["q"], ref["k"], ref["v"] = q, k, v
        q_rot, _ = apply_rotary_pos_emb(q.transpose(1, 2), q.transpose(1, 2), cos, sin)
        k_rot, _ = apply_rotary_pos_emb(k.transpose(1, 2), k.transpose(1, 2), cos, sin)
        ref["q_rot"], ref["k_rot"] = q_rot.transpose(1, 2).contiguous(), k_rot.transpose(1, 2).contiguous()
        ref["q_smolvla_rope"] = apply_rope(q, pos)
        ref["q_smolvla_rope_theta"] = apply_rope(q, pos, max_wavelength=config.rope_parameters["rope_theta"])
        cos16, sin16 = model.rotary_emb(x.bfloat16(), pos)
        q16 = q.bfloat16()
        ref["q_rot_bf16"] = apply_rotary_pos_emb(q16.transpose(1, 2), q16.transpose(1, 2), cos16, sin16)[0].transpose(1, 2).contiguous()
        ref["q_smolvla_rope_bf16"] = apply_rope(q16, pos)
        diff = (ref["q_rot"] - ref["q_smolvla_rope_theta"]).abs().max().item()
        print(f"[{name}] transformers RoPE vs SmolVLA apply_rope (same base, fp32): max |diff| = {diff:.3g}")

        # SmolVLA's eager attention (fp32 and bf16), with and without fully masked rows.
        ref["smolvla_attn"] = smolvla_eager(H, KV, mask, q, k, v)
        ref["smolvla_attn_fully_masked"] = smolvla_eager(H, KV, fully_masked, q, k, v)
        ref["smolvla_attn_bf16"] = smolvla_eager(H, KV, mask, q.bfloat16(), k.bfloat16(), v.bfloat16())

        # Decoder layers with both transformers backends, fp32 then bf16.
        mask4 = mask[:, None]
        inv_freq = model.rotary_emb.inv_freq.clone()
        for dtype, tag in ((torch.float32, ""), (torch.bfloat16, "_bf16")):
            model.to(dtype)
            xd = x.to(dtype)
            if dtype == torch.bfloat16:
                # model.to(bf16) also rounds the non-persistent inv_freq buffer to bf16; a model loaded
                # with from_pretrained(dtype=bf16) keeps it fp32 (the case lrhost matches by default).
                outs, _ = run_layers(model, xd, pos, mask4, "sdpa")
                ref["layer0_sdpa_bf16_rounded_inv_freq"] = outs[0]
                model.rotary_emb.register_buffer("inv_freq", inv_freq.clone(), persistent=False)
            outs, final = run_layers(model, xd, pos, mask4, "sdpa")
            for i, o in enumerate(outs):
                ref[f"layer{i}_sdpa{tag}"] = o
            ref[f"final_sdpa{tag}"] = final
            outs, final = run_layers(model, xd, pos, additive(mask4, dtype), "eager")
            for i, o in enumerate(outs):
                ref[f"layer{i}_eager{tag}"] = o
            ref[f"final_eager{tag}"] = final
            # No mask at all: transformers' causal sdpa path (enable_gqa + is_causal).
            outs, _ = run_layers(model, xd, pos, None, "sdpa")
            ref[f"layer0_sdpa_causal{tag}"] = outs[0]
        model.to(torch.float32)
    save_file({k: v.contiguous() for k, v in ref.items()}, str(folder / "reference.safetensors"))
    print(f"[{name}] wrote {folder}")


def main():
    out = Path(sys.argv[1])
    write_case(out, "plain", layers=3, bias=False, seed=1234)
    write_case(out, "bias", layers=1, bias=True, seed=4321)


if __name__ == "__main__":
    main()
