// ACT network construction (LeRobot's attribute order, then its xavier re-initialisation of the
// transformer) and the forward pass, token for token as LeRobot builds the sequences.
#include "host/policy/act/act_model.hpp"

#include "host/nn/linear.hpp"
#include "host/policy/act/act_sinusoid.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::policy::act {

ACTImpl::ACTImpl(const ACTConfig& config) : config_(config) {
  robot_state_ = config_.robot_state_feature();
  env_state_ = config_.env_state_feature();
  has_images_ = !config_.image_features().empty();
  const int64_t dim = config_.dim_model;
  const int64_t action_dim = config_.action_feature()->shape.at(0);

  if (config_.use_vae) {
    vae_encoder_ = register_module("vae_encoder", ACTEncoder(config_, /*is_vae_encoder=*/true));
    vae_encoder_cls_embed_ = register_module("vae_encoder_cls_embed", torch::nn::Embedding(1, dim));
    if (robot_state_)
      vae_encoder_robot_state_input_proj_ =
          register_module("vae_encoder_robot_state_input_proj", torch::nn::Linear(robot_state_->shape.at(0), dim));
    vae_encoder_action_input_proj_ =
        register_module("vae_encoder_action_input_proj", torch::nn::Linear(action_dim, dim));
    vae_encoder_latent_output_proj_ =
        register_module("vae_encoder_latent_output_proj", torch::nn::Linear(dim, 2 * config_.latent_dim));
    const int64_t tokens = 1 + config_.chunk_size + (robot_state_ ? 1 : 0);
    vae_encoder_pos_enc_ =
        register_buffer("vae_encoder_pos_enc", sinusoidal_pos_embedding_1d(tokens, dim).unsqueeze(0));
  }

  if (has_images_) {
    backbone_ = register_module("backbone", vision::ResNet18(vision::ResNet18Options{vision::NormKind::FrozenBatchNorm,
                                                                                     /*numbered_children=*/false}));
    if (config_.pretrained_backbone_weights) backbone_->load_torchvision_weights(*config_.pretrained_backbone_weights);
  }

  encoder_ = register_module("encoder", ACTEncoder(config_, /*is_vae_encoder=*/false));
  decoder_ = register_module("decoder", ACTDecoder(config_));

  if (robot_state_)
    encoder_robot_state_input_proj_ =
        register_module("encoder_robot_state_input_proj", torch::nn::Linear(robot_state_->shape.at(0), dim));
  if (env_state_)
    encoder_env_state_input_proj_ =
        register_module("encoder_env_state_input_proj", torch::nn::Linear(env_state_->shape.at(0), dim));
  encoder_latent_input_proj_ = register_module("encoder_latent_input_proj", torch::nn::Linear(config_.latent_dim, dim));
  if (has_images_)
    encoder_img_feat_input_proj_ =
        register_module("encoder_img_feat_input_proj",
                        torch::nn::Conv2d(torch::nn::Conv2dOptions(vision::ResNet18Impl::kOutChannels, dim, 1)));
  const int64_t n_1d_tokens = 1 + (robot_state_ ? 1 : 0) + (env_state_ ? 1 : 0);
  encoder_1d_feature_pos_embed_ =
      register_module("encoder_1d_feature_pos_embed", torch::nn::Embedding(n_1d_tokens, dim));
  decoder_pos_embed_ = register_module("decoder_pos_embed", torch::nn::Embedding(config_.chunk_size, dim));
  action_head_ = register_module("action_head", torch::nn::Linear(dim, action_dim));

  // LeRobot's _reset_parameters: xavier-uniform on every matrix of the transformer encoder/decoder.
  torch::NoGradGuard no_grad;
  for (auto* stack : {static_cast<torch::nn::Module*>(encoder_.get()), static_cast<torch::nn::Module*>(decoder_.get())})
    for (auto& p : stack->parameters())
      if (p.dim() > 1) torch::nn::init::xavier_uniform_(p);
}

const torch::Tensor& ACTImpl::input(const std::map<std::string, torch::Tensor>& batch, const std::string& key) const {
  return require_input(batch, key, "act");
}

ACTOutput ACTImpl::forward(const std::map<std::string, torch::Tensor>& batch,
                           const std::vector<torch::Tensor>& images) {
  ACTOutput out;
  const bool run_vae = config_.use_vae && is_training();
  const int64_t batch_size = !images.empty() ? images.front().size(0) : input(batch, env_state_->key).size(0);
  const auto options = torch::TensorOptions()
                           .dtype(torch::kFloat32)
                           .device(!images.empty() ? images.front().device() : input(batch, env_state_->key).device());

  torch::Tensor latent_sample;
  if (run_vae) {
    // LeRobot asserts the actions are there when training the VAE.
    const auto& actions = input(batch, "action");
    const auto& action_is_pad = input(batch, "action_is_pad");
    // Tokens [cls, (robot state), actions...], batch-first here, sequence-first for the encoder.
    std::vector<torch::Tensor> tokens{vae_encoder_cls_embed_->weight.unsqueeze(0).expand({batch_size, 1, -1})};
    if (robot_state_)
      tokens.push_back(
          nn::apply_linear(vae_encoder_robot_state_input_proj_, input(batch, "observation.state")).unsqueeze(1));
    tokens.push_back(nn::apply_linear(vae_encoder_action_input_proj_, actions));
    auto vae_input = torch::cat(tokens, 1);
    auto pos_embed = vae_encoder_pos_enc_.clone().detach();
    // Key padding: cls and state are real tokens; padded actions (past the episode end) are ignored.
    auto real = torch::zeros({batch_size, robot_state_ ? 2 : 1}, options.dtype(torch::kBool));
    auto key_padding_mask = torch::cat({real, action_is_pad.to(torch::kBool)}, 1);
    auto cls_out =
        vae_encoder_->forward(vae_input.permute({1, 0, 2}), pos_embed.permute({1, 0, 2}), key_padding_mask)[0];
    auto params = nn::apply_linear(vae_encoder_latent_output_proj_, cls_out);
    using torch::indexing::Slice;
    out.mu = params.index({Slice(), Slice(0, config_.latent_dim)});
    out.log_sigma_x2 = params.index({Slice(), Slice(config_.latent_dim, torch::indexing::None)});
    // Reparameterisation; this randn_like is the one random draw LeRobot makes here.
    latent_sample = out.mu + out.log_sigma_x2.div(2).exp() * torch::randn_like(out.mu);
  } else {
    latent_sample = torch::zeros({batch_size, config_.latent_dim}, options);
  }

  // Encoder tokens [latent, (state), (env state), camera pixels...] (sequence-first) and their
  // position embeddings: learned rows for the 1-D tokens, the 2-D sinusoid for the pixels.
  std::vector<torch::Tensor> tokens{nn::apply_linear(encoder_latent_input_proj_, latent_sample).unsqueeze(0)};
  std::vector<torch::Tensor> pos{encoder_1d_feature_pos_embed_->weight.unsqueeze(1)};
  if (robot_state_)
    tokens.push_back(nn::apply_linear(encoder_robot_state_input_proj_, input(batch, "observation.state")).unsqueeze(0));
  if (env_state_)
    tokens.push_back(nn::apply_linear(encoder_env_state_input_proj_, input(batch, env_state_->key)).unsqueeze(0));
  for (const auto& image : images) {
    auto features = backbone_->forward(image);
    auto cam_pos = sinusoid_for(features);
    features = encoder_img_feat_input_proj_->forward(features);
    // (B, C, H, W) -> (H*W, B, C), row-major over (h, w) as einops "b c h w -> (h w) b c".
    tokens.push_back(features.flatten(2).permute({2, 0, 1}));
    pos.push_back(cam_pos.flatten(2).permute({2, 0, 1}));
  }
  auto encoder_in = torch::cat(tokens, 0);
  auto encoder_pos = torch::cat(pos, 0);

  auto encoder_out = encoder_->forward(encoder_in, encoder_pos);
  auto decoder_in = torch::zeros({config_.chunk_size, batch_size, config_.dim_model}, encoder_pos.options());
  auto decoder_out = decoder_->forward(decoder_in, encoder_out, decoder_pos_embed_->weight.unsqueeze(1), encoder_pos);
  out.actions = nn::apply_linear(action_head_, decoder_out.transpose(0, 1));
  return out;
}

torch::Tensor ACTImpl::sinusoid_for(const torch::Tensor& features) const {
  return sinusoidal_pos_embedding_2d(features, config_.dim_model / 2).to(features.dtype());
}

}  // namespace lrhost::policy::act
