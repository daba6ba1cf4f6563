"""Oracle for lrhost's Qwen3-VL language model (host/nn/qwen3_vl_text): transformers 5.5's own
Qwen3VLTextModel (SDPA) at a tiny geometry with GR00T N1.7's layout (GQA, per-head q/k RMSNorm,
interleaved M-RoPE), random weights at unit gain, fed inputs_embeds with left padding, 3-row
position ids whose image span differs per row (as get_rope_index builds them), and DeepStack
features added after the first two layers.

Writes into OUT:
  config.json        the text_config
  text.safetensors   the model's weights under "language_model."
  inputs.safetensors inputs_embeds, position_ids (3,B,L), attention_mask, visual_pos_masks, deepstack.{0,1}, probe
  outputs.safetensors tap (the last layer's output before the final norm: what GR00T reads), last (after
                      norm), grad.inputs_embeds and grad.<param> of sum(tap * probe)

    python qwen3_text_oracle.py OUT
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import Qwen3VLTextConfig
from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextModel

CONFIG = dict(attention_bias=False, head_dim=16, hidden_act="silu", hidden_size=64, intermediate_size=128,
              max_position_embeddings=4096, num_attention_heads=4, num_hidden_layers=3, num_key_value_heads=2,
              rms_norm_eps=1e-6, vocab_size=300, tie_word_embeddings=True,
              rope_parameters={"rope_theta": 5000000.0, "mrope_interleaved": True, "mrope_section": [4, 2, 2],
                               "rope_type": "default"})


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = Qwen3VLTextConfig(**CONFIG)
    config._attn_implementation = "sdpa"
    model = Qwen3VLTextModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * (1.0 / p.shape[-1] ** 0.5))
    B, L, D = 2, 14, 64
    g = torch.Generator().manual_seed(1)
    embeds = torch.randn(B, L, D, generator=g, requires_grad=True)
    mask = torch.ones(B, L, dtype=torch.long)
    mask[1, :4] = 0  # left padding
    visual = torch.zeros(B, L, dtype=torch.bool)
    visual[0, 3:7] = True
    visual[1, 6:10] = True
    # get_rope_index's rule: text runs arange on all rows; a 2x2 llm grid at p: T=p, H=p+row, W=p+col,
    # then the next text continues at p + max(h, w) // 2 ... (here: p + 2); pads stay 0.
    position = torch.zeros(3, B, L, dtype=torch.long)
    for b in range(B):
        p = 0
        j = 0
        while j < L:
            if mask[b, j] == 0:
                j += 1
                continue
            if visual[b, j]:
                for k in range(4):
                    position[0, b, j + k] = p
                    position[1, b, j + k] = p + k // 2
                    position[2, b, j + k] = p + k % 2
                p += 2
                j += 4
            else:
                position[:, b, j] = p
                p += 1
                j += 1
    deepstack = [torch.randn(int(visual.sum()), D, generator=g) for _ in range(2)]
    probe = torch.randn(B, L, D, generator=g)
    taps = {}
    model.layers[-1].register_forward_hook(lambda m, i, o: taps.__setitem__("tap", o))
    position4 = torch.cat([position[:1], position], 0)  # GR00T's layout: a text row first
    result = model(inputs_embeds=embeds, attention_mask=mask, position_ids=position4, visual_pos_masks=visual,
                   deepstack_visual_embeds=deepstack, use_cache=False)
    tap = taps["tap"]
    (tap * probe).sum().backward()
    outputs = {"tap": tap.detach(), "last": result.last_hidden_state.detach(), "grad.inputs_embeds": embeds.grad}
    for name, p in model.named_parameters():
        if p.grad is not None:
            outputs["grad." + name] = p.grad
    save_file({"language_model." + k: v.contiguous() for k, v in model.state_dict().items()},
              os.path.join(out, "text.safetensors"))
    save_file({"inputs_embeds": embeds.detach(), "position_ids": position, "attention_mask": mask,
               "visual_pos_masks": visual, "deepstack.0": deepstack[0], "deepstack.1": deepstack[1], "probe": probe},
              os.path.join(out, "inputs.safetensors"))
    save_file(outputs, os.path.join(out, "outputs.safetensors"))
    json.dump({**CONFIG, "model_type": "qwen3_vl_text"}, open(os.path.join(out, "config.json"), "w"), indent=2)
    print(f"qwen3_text_oracle: tap |max| {tap.abs().max().item():.4f}, {len(outputs) - 3} parameter gradients")


if __name__ == "__main__":
    main()
