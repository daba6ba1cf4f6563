"""Oracle for lrhost's Qwen3-VL backbone as GR00T N1.7 runs it (host/nn/qwen3_vl_model):
transformers 5.5's Qwen3VLModel at a tiny geometry (text 4 layers cut to select_layer = 3 as
LeRobot's Qwen3Backbone pops them, vision 4 blocks with DeepStack taps 1 and 3), random weights at
unit gain, two prompts of two images each (the second left-padded), the position ids computed as
Qwen3Backbone computes them (compute_3d_position_ids with mm_token_type_ids, a text row prepended),
and the last kept layer's output taken with a forward hook, as _last_decoder_layer_output does.

Writes into OUT: config.json (the Qwen3-VL config), backbone.safetensors (weights under "model."),
inputs.safetensors (input_ids, attention_mask, pixel_values, image_grid_thw, probe), outputs.safetensors
(position_ids (3 rows), tap, grad.pixel_values and grad.<param> of sum(tap * probe): tune_llm and tune_visual).

    python qwen3_backbone_oracle.py OUT
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import Qwen3VLConfig
from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLModel

VISION_START, VISION_END, IMAGE, VIDEO = 3, 4, 5, 6
TEXT = dict(attention_bias=False, head_dim=16, hidden_act="silu", hidden_size=64, intermediate_size=128,
            max_position_embeddings=4096, num_attention_heads=4, num_hidden_layers=4, num_key_value_heads=2,
            rms_norm_eps=1e-6, vocab_size=300, tie_word_embeddings=True,
            rope_parameters={"rope_theta": 5000000.0, "mrope_interleaved": True, "mrope_section": [4, 2, 2],
                             "rope_type": "default"})
VISION = dict(deepstack_visual_indexes=[1, 3], depth=4, hidden_act="gelu_pytorch_tanh", hidden_size=32, in_channels=3,
              intermediate_size=64, num_heads=2, num_position_embeddings=64, out_hidden_size=64, patch_size=8,
              spatial_merge_size=2, temporal_patch_size=2)
SELECT_LAYER = 3


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = Qwen3VLConfig(image_token_id=IMAGE, video_token_id=VIDEO, vision_start_token_id=VISION_START,
                           vision_end_token_id=VISION_END, tie_word_embeddings=True, text_config=TEXT,
                           vision_config=VISION)
    config._attn_implementation = "sdpa"
    config.text_config._attn_implementation = "sdpa"
    config.vision_config._attn_implementation = "sdpa"
    model = Qwen3VLModel(config).eval()
    while len(model.language_model.layers) > SELECT_LAYER:  # Qwen3Backbone's cut
        model.language_model.layers.pop(-1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * (1.0 / p[0].numel() ** 0.5))
    g = torch.Generator().manual_seed(1)
    image = [VISION_START] + [IMAGE] * 9 + [VISION_END]  # a 6x6-patch image: 3x3 merged tokens
    rows = [image + image + torch.randint(10, 300, (6,), generator=g).tolist(),
            [0] * 4 + image + image + torch.randint(10, 300, (2,), generator=g).tolist()]
    input_ids = torch.tensor(rows)
    attention = torch.ones_like(input_ids)
    attention[1, :4] = 0
    grid = torch.tensor([[1, 6, 6]] * 4)
    pixels = torch.randn(4 * 36, 3 * 2 * 8 * 8, generator=g, requires_grad=True)
    mm_types = (input_ids == IMAGE).int()
    position = model.compute_3d_position_ids(input_ids=input_ids, inputs_embeds=None, image_grid_thw=grid,
                                             attention_mask=attention, mm_token_type_ids=mm_types)
    position4 = torch.cat([position[:1], position], 0)
    taps = {}
    model.language_model.layers[-1].register_forward_hook(lambda m, i, o: taps.__setitem__("tap", o))
    model(input_ids=input_ids, attention_mask=attention, pixel_values=pixels, image_grid_thw=grid,
          position_ids=position4, mm_token_type_ids=mm_types, use_cache=False)
    tap = taps["tap"]
    probe = torch.randn(tap.shape, generator=g)
    (tap * probe).sum().backward()
    outputs = {"position_ids": position, "tap": tap.detach(), "grad.pixel_values": pixels.grad}
    for name, p in model.named_parameters():
        if p.grad is not None:
            outputs["grad." + name] = p.grad
    save_file({"model." + k: v.contiguous() for k, v in model.state_dict().items()},
              os.path.join(out, "backbone.safetensors"))
    save_file({"input_ids": input_ids, "attention_mask": attention, "pixel_values": pixels.detach(),
               "image_grid_thw": grid, "probe": probe}, os.path.join(out, "inputs.safetensors"))
    save_file(outputs, os.path.join(out, "outputs.safetensors"))
    json.dump({"image_token_id": IMAGE, "video_token_id": VIDEO, "vision_start_token_id": VISION_START,
               "vision_end_token_id": VISION_END, "text_config": {**TEXT, "model_type": "qwen3_vl_text"},
               "vision_config": {**VISION, "model_type": "qwen3_vl"}, "select_layer": SELECT_LAYER},
              open(os.path.join(out, "config.json"), "w"), indent=2)
    print(f"qwen3_backbone_oracle: tap {tuple(tap.shape)}, {len(outputs) - 3} parameter gradients, positions row 1: "
          f"{position[0, 1].tolist()}")


if __name__ == "__main__":
    main()
