// ACT's training FLOPs per sample, in the order act_model.cpp's training forward runs: the VAE encoder
// over [cls, state, actions] (use_vae), the ResNet-18 trunk and its 1x1 projection per camera, the
// encoder over [latent, state, env state, pixels], the decoder's chunk_size queries (self-attention,
// then cross-attention to the encoder's tokens) and the action head. Everything trains (the backbone
// too, at optimizer_lr_backbone); the batch's state, actions and pixels need no gradient, nor does
// the decoder's all-zero input, whose value projection in the first layer therefore has none.
#include "host/policy/act/act_flops.hpp"

#include "host/policy/training_flops.hpp"
#include "host/policy/vision/resnet18.hpp"
#include "host/policy/vision/resnet18_flops.hpp"

namespace lrhost::policy::act {
namespace {

struct Counter {
  TrainingFlops flops;
  double dim, heads, head_dim, feedforward;

  void linear(double rows, double in, double out, bool input_needs_grad = true) {
    flops.matmul(rows, in, out, /*weight_trains=*/true, input_needs_grad);
  }
  // torch.nn.MultiheadAttention's arithmetic (act_attention.cpp) for `queries` over `keys`.
  void attention(double queries, double keys, bool query_input_grad, bool key_input_grad, bool value_input_grad) {
    linear(queries, dim, dim, query_input_grad);
    linear(keys, dim, dim, key_input_grad);
    linear(keys, dim, dim, value_input_grad);
    flops.activation_matmul(heads * queries, head_dim, keys, true);  // scores
    flops.activation_matmul(heads * queries, keys, head_dim, true);  // weighted values
    linear(queries, dim, dim);                                       // out_proj
  }
  void feed_forward(double rows) {
    linear(rows, dim, feedforward);
    linear(rows, feedforward, dim);
  }
  void encoder_layer(double tokens) {
    attention(tokens, tokens, true, true, true);
    feed_forward(tokens);
  }
};

}  // namespace

double act_training_flops_per_sample(const ACTConfig& config) {
  Counter c{{},
            static_cast<double>(config.dim_model),
            static_cast<double>(config.n_heads),
            static_cast<double>(config.dim_model / config.n_heads),
            static_cast<double>(config.dim_feedforward)};
  const auto* state = config.robot_state_feature();
  const auto* env_state = config.env_state_feature();
  const double chunk = static_cast<double>(config.chunk_size);
  const double action_dim = static_cast<double>(config.action_feature()->shape.at(0));
  const double latent = static_cast<double>(config.latent_dim);

  if (config.use_vae) {
    if (state) c.linear(1, static_cast<double>(state->shape.at(0)), c.dim, false);
    c.linear(chunk, action_dim, c.dim, false);
    const double tokens = 1 + chunk + (state ? 1 : 0);
    for (int64_t layer = 0; layer < config.n_vae_encoder_layers; ++layer) c.encoder_layer(tokens);
    c.linear(1, c.dim, 2 * latent);  // on the cls token only
  }

  // Without the VAE the latent is zeros, which need no gradient.
  c.linear(1, latent, c.dim, config.use_vae);
  double tokens = 1;
  for (const auto* feature : {state, env_state}) {
    if (!feature) continue;
    c.linear(1, static_cast<double>(feature->shape.at(0)), c.dim, false);
    tokens += 1;
  }
  for (const auto& camera : config.image_features()) {
    auto [height, width] = vision::count_resnet18_flops(c.flops, camera.shape.at(1), camera.shape.at(2), true);
    const double pixels = static_cast<double>(height * width);
    c.linear(pixels, vision::ResNet18Impl::kOutChannels, c.dim);  // encoder_img_feat_input_proj, a 1x1 convolution
    tokens += pixels;
  }
  for (int64_t layer = 0; layer < config.n_encoder_layers; ++layer) c.encoder_layer(tokens);

  for (int64_t layer = 0; layer < config.n_decoder_layers; ++layer) {
    // Layer 0's input is zeros: its queries and keys (zeros + position embedding) need a gradient, its
    // values do not.
    c.attention(chunk, chunk, true, true, layer > 0);
    c.attention(chunk, tokens, true, true, true);
    c.feed_forward(chunk);
  }
  c.linear(chunk, c.dim, action_dim);  // action_head
  return c.flops.total();
}

}  // namespace lrhost::policy::act
