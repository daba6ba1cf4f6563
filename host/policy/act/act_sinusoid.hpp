// ACT's fixed sinusoidal position embeddings: the 1-D table of the VAE encoder's input tokens
// (create_sinusoidal_pos_embedding, computed in float64 then stored float32, a buffer in the
// state_dict) and the 2-D embedding of camera feature maps (ACTSinusoidalPositionEmbedding2d:
// positions 1..H and 1..W scaled to (0, 2π], interleaved sin/cos per axis, y channels then x).
#pragma once
#include <torch/torch.h>

namespace lrhost::policy::act {

// (num_positions, dimension) float32: even columns sin(p / 10000^(2⌊j/2⌋/d)), odd columns cos(...).
torch::Tensor sinusoidal_pos_embedding_1d(int64_t num_positions, int64_t dimension);

// For a (B, C, H, W) feature map: (1, 2 * dimension, H, W) float32 on its device, where `dimension`
// is half the model width (LeRobot builds the module with dim_model // 2).
torch::Tensor sinusoidal_pos_embedding_2d(const torch::Tensor& feature_map, int64_t dimension);

}  // namespace lrhost::policy::act
