"""Benchmark peer of tests/bench/gemma_forward.cpp: LeRobot 0.6.1's PiGemma decoder layer at Gemma-2B
size (eager attention, pi0's additive mask, 304 tokens) and transformers 5.5's SigLIP So400m/14 at 224
+ PaliGemma projector (SDPA), random weights, eval, no_grad, the same thread count.

    gemma_forward.py [--threads N] [--batch B] [--iters K] [--warmup W] [--tokens T]
"""

import argparse
import time

import torch
from transformers import CONFIG_MAPPING
from transformers.models.gemma.modeling_gemma import GemmaRotaryEmbedding
from transformers.models.paligemma.modeling_paligemma import PaliGemmaMultiModalProjector
from transformers.models.siglip.modeling_siglip import SiglipVisionModel

from lerobot.policies.pi_gemma import _get_pi_gemma_decoder_layer_base
from lerobot.utils.constants import OPENPI_ATTENTION_MASK_VALUE


def time_it(what, args, body):
    times = []
    for i in range(args.warmup + args.iters):
        start = time.perf_counter()
        body()
        elapsed = (time.perf_counter() - start) * 1000
        if i >= args.warmup:
            times.append(elapsed)
    times.sort()
    print(f"transformers/lerobot {what}: batch {args.batch}, {args.threads} threads: "
          f"median {times[len(times) // 2]:.0f} ms, best {times[0]:.0f} ms ({args.iters} iters)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=304)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    # PaliGemmaWithExpertModel's PaliGemma (modeling_pi0.py): Gemma-2B text, So400m vision.
    config = CONFIG_MAPPING["paligemma"]()
    t = config.text_config
    t.hidden_size, t.intermediate_size, t.num_attention_heads, t.head_dim = 2048, 16384, 8, 256
    t.num_hidden_layers, t.num_key_value_heads = 18, 1
    t._attn_implementation = "eager"
    config.vision_config.intermediate_size = 4304
    config.vision_config.projection_dim = 2048
    config.vision_config._attn_implementation = "sdpa"
    with torch.no_grad():
        layer = _get_pi_gemma_decoder_layer_base()(t, 0).eval()
        rotary = GemmaRotaryEmbedding(t)
        x = torch.randn(args.batch, args.tokens, 2048)
        positions = torch.arange(args.tokens)[None].repeat(args.batch, 1)
        allowed = torch.ones(args.batch, 1, args.tokens, args.tokens, dtype=torch.bool)
        mask = torch.where(allowed, 0.0, OPENPI_ATTENTION_MASK_VALUE).to(torch.float32)
        time_it(f"gemma-2b layer forward, {args.tokens} tokens", args,
                lambda: layer(x, attention_mask=mask, position_ids=positions,
                              position_embeddings=rotary(x, positions)))
        del layer
        tower = SiglipVisionModel(config.vision_config).eval()
        projector = PaliGemmaMultiModalProjector(config).eval()
        pixels = torch.rand(args.batch, 3, 224, 224) * 2 - 1
        time_it("siglip so400m/14 224 + projector forward", args,
                lambda: projector(tower(pixel_values=pixels).last_hidden_state))


if __name__ == "__main__":
    main()
