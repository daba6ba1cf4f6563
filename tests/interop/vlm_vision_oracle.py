"""transformers' (5.5.x) and LeRobot's (0.6.1) side of the VLM vision interop test.

    vlm_vision_oracle.py OUT_DIR [--seed S]

Builds a tiny SmolVLMForConditionalGeneration (vision hidden 64, 3 layers, 4 heads, image 64, patch 8,
scale factor 2, text hidden 48) offline from a SmolVLMConfig with random weights (every parameter,
LayerNorm weights included, perturbed so a swapped key cannot go unnoticed), in its default attention
backend (SDPA), and writes to OUT_DIR:
  config.json          the model's config (save_pretrained), read by lrhost
  model.safetensors    the whole state_dict under transformers' key names
  keys.json            named_parameters() order of model.vision_model and model.connector
  io.safetensors       inputs and reference outputs, fp32 and bf16:
     pixels            (2, 3, 64, 64) in [-1, 1];  pixels_small (2, 3, 48, 48) (a 6x6 patch grid)
     {fp32,bf16}.vision / .connector / .vision_small / .connector_small
                       last_hidden_state after post_layernorm, and the connector's output; bf16 =
                       model.to(bfloat16) with bf16 pixels (stored as fp32, exactly)
     images_wide (2, 3, 30, 50), images_tall (1, 3, 120, 90) in [0, 1]
     prep_wide, prep_tall   LeRobot's resize_with_pad(img, 64, 64, pad_value=0) * 2 - 1
It also prints the SDPA-vs-eager difference of the vision output (transformers' two backends).
Exit 77 when transformers or lerobot cannot be imported.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
try:
    import torch
    from safetensors.torch import save_file
    from transformers import SmolVLMConfig, SmolVLMForConditionalGeneration
    from lerobot.policies.common.vla_utils import resize_with_pad
except ImportError as error:  # the oracle is optional
    print(f"oracle unavailable: {error}")
    sys.exit(77)


def build(seed: int) -> SmolVLMForConditionalGeneration:
    config = SmolVLMConfig(
        text_config=dict(model_type="llama", hidden_size=48, intermediate_size=96, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=12, vocab_size=128,
                         pad_token_id=2),
        vision_config=dict(hidden_size=64, intermediate_size=160, num_hidden_layers=3, num_attention_heads=4,
                           image_size=64, patch_size=8),
        scale_factor=2, image_token_id=120, vocab_size=128, tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = SmolVLMForConditionalGeneration(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.05)
    return model


def run(model, pixels):
    vision = model.model.vision_model
    with torch.no_grad():
        hidden = vision(pixel_values=pixels.to(vision.dtype)).last_hidden_state
        return hidden, model.model.connector(hidden)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)

    model = build(args.seed)
    backend = model.model.vision_model.config._attn_implementation
    if backend != "sdpa":
        print(f"expected transformers' default attention backend 'sdpa' for the vision tower, got {backend!r}")
        return 1
    model.config.save_pretrained(args.out)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(args.out / "model.safetensors"))
    keys = [f"model.vision_model.{n}" for n, _ in model.model.vision_model.named_parameters()]
    keys += [f"model.connector.{n}" for n, _ in model.model.connector.named_parameters()]
    (args.out / "keys.json").write_text(json.dumps(keys, indent=1))

    generator = torch.Generator().manual_seed(args.seed + 1)
    io = {
        "pixels": torch.rand(2, 3, 64, 64, generator=generator) * 2 - 1,
        "pixels_small": torch.rand(2, 3, 48, 48, generator=generator) * 2 - 1,
        "images_wide": torch.rand(2, 3, 30, 50, generator=generator),
        "images_tall": torch.rand(1, 3, 120, 90, generator=generator),
    }
    for name in ("wide", "tall"):
        io[f"prep_{name}"] = resize_with_pad(io[f"images_{name}"], 64, 64, pad_value=0) * 2.0 - 1.0

    # transformers' eager backend on the same fp32 weights: SDPA must agree within fp32 rounding.
    vision_config = model.model.vision_model.config
    sdpa, _ = run(model, io["pixels"])
    vision_config._attn_implementation = "eager"
    eager, _ = run(model, io["pixels"])
    vision_config._attn_implementation = "sdpa"
    print(f"transformers vision output, sdpa vs eager: max abs diff {(eager - sdpa).abs().max():.3g}"
          f" (output max abs {sdpa.abs().max():.3g})")

    # bf16 last: the round trip through bf16 changes the weights.
    for dtype_name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        model.to(dtype)
        for suffix in ("", "_small"):
            hidden, tokens = run(model, io["pixels" + suffix].to(dtype))
            io[f"{dtype_name}.vision{suffix}"] = hidden.float()
            io[f"{dtype_name}.connector{suffix}"] = tokens.float()

    save_file({k: v.contiguous() for k, v in io.items()}, str(args.out / "io.safetensors"))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
