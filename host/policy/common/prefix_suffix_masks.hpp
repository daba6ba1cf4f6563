// Attention masks and position ids of a VLA's token sequence [prefix; suffix] (LeRobot 0.6.1
// policies/common/vla_utils.py, after openpi and big_vision): the prefix holds camera, language and
// (SmolVLA, pi0) state tokens, the suffix the noisy action tokens. Which token may attend to which
// follows from two per-token flags, pad (a real token) and ar (1 = starts a new attention block):
// a token sees every real token whose block is not after its own. SmolVLA: images and language
// ar = 0, state 1, each action 1; pi0: state 1, first action 1, other actions 0; pi05: first action 1.
// Training runs the whole sequence at once; inference runs the prefix once into a KV cache and then
// only the suffix per denoising step, with the suffix variants below.
#pragma once
#include <torch/torch.h>

namespace lrhost::policy::common {

// make_att_2d_masks: pad_masks (B, N) bool, att_masks (B, N) integer ("ar") -> (B, N, N) bool,
// allowed[q][k] = cumsum(ar)[k] <= cumsum(ar)[q] and pad[q] and pad[k].
torch::Tensor make_att_2d_masks(const torch::Tensor& pad_masks, const torch::Tensor& att_masks);

// Position ids (B, N) int64 = cumsum(pad) − 1: padded tokens repeat the previous position, so real
// tokens are numbered 0, 1, ... without gaps.
torch::Tensor positions_from_pad_masks(const torch::Tensor& pad_masks);

// Inference with a prefix cache: the mask (B, S, P + S) of the suffix queries over [prefix; suffix]
// keys. Every real prefix token is visible (the suffix's blocks all come after the prefix), then
// make_att_2d_masks within the suffix.
torch::Tensor suffix_attention_mask(const torch::Tensor& prefix_pad_masks, const torch::Tensor& suffix_pad_masks,
                                    const torch::Tensor& suffix_att_masks);

// Inference with a prefix cache: the suffix's position ids (B, S), continuing after the real prefix
// tokens: sum(prefix pad) + cumsum(suffix pad) − 1.
torch::Tensor suffix_positions(const torch::Tensor& prefix_pad_masks, const torch::Tensor& suffix_pad_masks);

// (openpi's additive form of these masks, prepare_attention_masks_4d, is nn::additive_attention_mask in
// host/nn/gemma_decoder_layer.hpp, next to the attention that adds it.)

}  // namespace lrhost::policy::common
