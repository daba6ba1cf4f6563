"""Oracle for lrhost's Qwen3-VL vision tower (host/nn/qwen3_vl_vision): transformers 5.5's own
Qwen3VLVisionModel (SDPA) at a tiny geometry with GR00T N1.7's layout (Conv3d patch embed, an
interpolated learned position grid, 2-D rotary, per-image attention, the patch merger and DeepStack
mergers), random weights at unit gain, two images of different grids (6x6 and 4x8 patches, so the
interpolation and the merge-block order are exercised off the square).

Writes into OUT: config.json (the vision_config), vision.safetensors (weights under "visual."),
inputs.safetensors (pixel_values, image_grid_thw, probe.merged, probe.deepstack.<k>), outputs.safetensors
(merged, deepstack.<k>, grad.pixel_values, grad.<param> of sum(merged * probe) + sum_k sum(deepstack_k * probe_k)).

    python qwen3_vision_oracle.py OUT
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLVisionConfig
from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLVisionModel

CONFIG = dict(deepstack_visual_indexes=[0, 2], depth=3, hidden_act="gelu_pytorch_tanh", hidden_size=32,
              in_channels=3, intermediate_size=64, num_heads=2, num_position_embeddings=64, out_hidden_size=48,
              patch_size=8, spatial_merge_size=2, temporal_patch_size=2)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = Qwen3VLVisionConfig(**CONFIG)
    config._attn_implementation = "sdpa"
    model = Qwen3VLVisionModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * (1.0 / p[0].numel() ** 0.5))
    grid = torch.tensor([[1, 6, 6], [1, 4, 8]])
    g = torch.Generator().manual_seed(1)
    n = int((grid[:, 0] * grid[:, 1] * grid[:, 2]).sum())
    pixels = torch.randn(n, 3 * 2 * 8 * 8, generator=g, requires_grad=True)
    result = model(pixels, grid_thw=grid)
    merged, deepstack = result.pooler_output, result.deepstack_features
    probe = torch.randn(merged.shape, generator=g)
    probes = [torch.randn(d.shape, generator=g) for d in deepstack]
    objective = (merged * probe).sum() + sum((d * q).sum() for d, q in zip(deepstack, probes))
    objective.backward()
    outputs = {"merged": merged.detach(), "grad.pixel_values": pixels.grad}
    inputs = {"pixel_values": pixels.detach(), "image_grid_thw": grid, "probe.merged": probe}
    for k, (d, q) in enumerate(zip(deepstack, probes)):
        outputs[f"deepstack.{k}"] = d.detach()
        inputs[f"probe.deepstack.{k}"] = q
    for name, p in model.named_parameters():
        if p.grad is not None:
            outputs["grad." + name] = p.grad
    save_file({"visual." + k: v.contiguous() for k, v in model.state_dict().items()},
              os.path.join(out, "vision.safetensors"))
    save_file(inputs, os.path.join(out, "inputs.safetensors"))
    save_file(outputs, os.path.join(out, "outputs.safetensors"))
    json.dump({**CONFIG, "model_type": "qwen3_vl"}, open(os.path.join(out, "config.json"), "w"), indent=2)
    print(f"qwen3_vision_oracle: merged {tuple(merged.shape)}, {len(deepstack)} deepstack, "
          f"{len(outputs) - 2 - len(deepstack)} parameter gradients")


if __name__ == "__main__":
    main()
