"""Benchmark peer of tests/bench/siglip_forward.cpp: transformers 5.5's SmolVLM vision tower and
connector at SmolVLM2-500M's sizes (512x512, 12 layers of width 768, scale 4 -> 960), random weights,
eval mode, no_grad, default attention backend (SDPA), the same thread count.

    siglip_forward.py [--threads N] [--batch B] [--iters K] [--warmup W]
"""

import argparse
import time

import torch
from transformers import SmolVLMConfig
from transformers.models.smolvlm.modeling_smolvlm import SmolVLMConnector, SmolVLMVisionTransformer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = SmolVLMConfig(
        text_config=dict(model_type="llama", hidden_size=960),
        vision_config=dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                           image_size=512, patch_size=16),
        scale_factor=4)
    config.vision_config._attn_implementation = "sdpa"
    vision = SmolVLMVisionTransformer(config.vision_config).eval()
    connector = SmolVLMConnector(config).eval()
    pixels = torch.rand(args.batch, 3, 512, 512) * 2 - 1
    times = []
    with torch.no_grad():
        for i in range(args.warmup + args.iters):
            start = time.perf_counter()
            tokens = connector(vision(pixel_values=pixels).last_hidden_state)
            elapsed = (time.perf_counter() - start) * 1000
            if i >= args.warmup:
                times.append(elapsed)
            assert tokens.shape[1] == 64
    times.sort()
    print(f"transformers siglip+connector forward: batch {args.batch}, {args.threads} threads: "
          f"median {times[len(times) // 2]:.0f} ms, best {times[0]:.0f} ms ({args.iters} iters)")


if __name__ == "__main__":
    main()
