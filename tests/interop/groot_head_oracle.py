"""Oracle for lrhost's GR00T N1.7 action head (host/policy/groot): LeRobot 0.6.1's own
GR00TN17ActionHead (groot_n1_7.py, with diffusers' Attention / FeedForward / Timesteps) at a tiny
geometry, random weights, fed random backbone features with left padding, image tokens and two
embodiments.

Writes into OUT:
  config.json        the GR00TN17Config fields the head reads (what a base checkpoint's config.json holds)
  head.safetensors   the head's state dict under "action_head." (as in GR00TN17's)
  inputs.safetensors backbone_features (B,L,E), backbone_attention_mask, image_mask (bool), state (B,1,S),
                     action (B,H,A), action_mask (B,H,A), embodiment_id (int32), noise (B,H,A), time (B),
                     sample_noise (B,H,A)
  outputs.safetensors loss (eval mode: no dropout, no state dropout; the noise and time the head drew),
                     grad.<name> of every parameter, action_pred (4 Euler steps from sample_noise)

The training loss is taken in eval mode so that it is deterministic: the head's own draws are then
only torch.randn(action.shape) and Beta(1.5, 1).sample([B]) on the CPU generator, in that order;
they are replayed here from the same seed and saved as noise / time, which lrhost's head takes as
inputs (dropout's RNG order is not compared here).

    python groot_head_oracle.py OUT
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from torch.distributions import Beta

from lerobot.policies.groot.groot_n1_7 import GR00TN17ActionHead, GR00TN17Config

HEAD = dict(backbone_embedding_dim=64, hidden_size=32, input_embedding_dim=48, max_state_dim=16, max_action_dim=16,
            action_horizon=8, max_seq_len=16, max_num_embodiments=16, state_history_length=1,
            diffusion_model_cfg={"positional_embeddings": None, "num_layers": 4, "num_attention_heads": 2,
                                 "attention_head_dim": 24, "norm_type": "ada_norm", "dropout": 0.2,
                                 "final_dropout": True, "output_dim": 32, "interleave_self_attention": True},
            vl_self_attention_cfg={"positional_embeddings": None, "num_layers": 1, "num_attention_heads": 2,
                                   "attention_head_dim": 32, "dropout": 0.2, "final_dropout": True})


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = GR00TN17Config(**HEAD)
    head = GR00TN17ActionHead(config)
    # Unit-gain weights so that every term matters (the defaults are 0.02-scaled and zero biases).
    with torch.no_grad():
        for name, p in head.named_parameters():
            p.copy_(torch.randn_like(p) * (0.3 if p.dim() > 1 else 0.1))
    B, L, E, H, A, S = 3, 12, 64, 8, 16, 16
    g = torch.Generator().manual_seed(1)
    features = torch.randn(B, L, E, generator=g)
    attention = torch.ones(B, L, dtype=torch.bool)
    attention[1, :3] = False  # left padding
    attention[2, :5] = False
    image = torch.zeros(B, L, dtype=torch.bool)
    image[:, 6:10] = True
    state = torch.randn(B, 1, S, generator=g)
    state[:, :, 6:] = 0  # a 6-wide state padded to 16
    action = torch.randn(B, H, A, generator=g)
    action[:, :, 7:] = 0
    mask = torch.zeros(B, H, A)
    mask[:, :, :7] = 1
    mask[1, 6:, :] = 0  # padded horizon steps
    embodiment = torch.tensor([10, 3, 10], dtype=torch.int32)

    head.eval()
    backbone = {"backbone_features": features, "backbone_attention_mask": attention, "image_mask": image}

    class Feature(dict):
        __getattr__ = dict.__getitem__

    torch.manual_seed(123)
    result = head.forward(Feature(backbone), Feature(state=state, action=action, action_mask=mask,
                                                      embodiment_id=embodiment))
    loss = result["loss"]
    loss.backward()
    # The draws the head made: randn(action.shape), then Beta(1.5, 1) on the CPU generator.
    torch.manual_seed(123)
    noise = torch.randn(action.shape)
    sample = Beta(torch.tensor(config.noise_beta_alpha), torch.tensor(config.noise_beta_beta),
                  validate_args=False).sample([B])
    time = (1 - sample) * config.noise_s

    with torch.no_grad():
        torch.manual_seed(7)
        sample_noise = torch.randn(B, H, A)
        torch.manual_seed(7)
        encoded = head._encode_features(Feature(backbone), Feature(state=state, embodiment_id=embodiment))
        pred = head.get_action_with_features(encoded["backbone_features"], encoded["state_features"], embodiment,
                                             Feature(backbone), Feature(state=state, embodiment_id=embodiment))
    outputs = {"loss": loss.detach().reshape(1), "action_pred": pred["action_pred"]}
    for name, p in head.named_parameters():
        outputs["grad." + name] = p.grad.clone()
    save_file({"action_head." + k: v.contiguous() for k, v in head.state_dict().items()},
              os.path.join(out, "head.safetensors"))
    save_file({"backbone_features": features, "backbone_attention_mask": attention, "image_mask": image,
               "state": state, "action": action, "action_mask": mask, "embodiment_id": embodiment,
               "noise": noise, "time": time, "sample_noise": sample_noise}, os.path.join(out, "inputs.safetensors"))
    save_file(outputs, os.path.join(out, "outputs.safetensors"))
    fields = {k: v for k, v in config.to_dict().items() if k in HEAD or k in (
        "use_vlln", "use_alternate_vl_dit", "attend_text_every_n_blocks", "add_pos_embed", "num_inference_timesteps",
        "noise_beta_alpha", "noise_beta_beta", "noise_s", "num_timestep_buckets", "state_dropout_prob")}
    json.dump(fields, open(os.path.join(out, "config.json"), "w"), indent=2)
    print(f"groot_head_oracle: loss {loss.item():.9f}, {len(outputs) - 2} gradients, action_pred "
          f"{tuple(pred['action_pred'].shape)}")


if __name__ == "__main__":
    main()
