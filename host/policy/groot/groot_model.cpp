// GR00T N1.7's network; see groot_model.hpp.
#include "host/policy/groot/groot_model.hpp"

#include "host/io/safetensors.hpp"
#include "host/nn/module_weights.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::groot {

GrootModelConfig GrootModelConfig::from_json(const nlohmann::json& groot, const nlohmann::json& backbone,
                                             const std::string& where) {
  GrootModelConfig c;
  c.backbone = nn::Qwen3VLConfig::from_json(backbone, where + " (backbone)");
  c.head = GrootHeadConfig::from_json(groot, where);
  if (groot.contains("select_layer")) c.select_layer = groot["select_layer"].get<int64_t>();
  if (c.select_layer < 1 || c.select_layer > c.backbone.text.num_hidden_layers)
    throw util::ConfigError(where + ": select_layer " + std::to_string(c.select_layer) + " outside 1.." +
                            std::to_string(c.backbone.text.num_hidden_layers) + " (the backbone's text layers)");
  if (c.head.backbone_embedding_dim != c.backbone.text.hidden_size)
    throw util::ConfigError(where + ": backbone_embedding_dim (" + std::to_string(c.head.backbone_embedding_dim) +
                            ") must equal the backbone's hidden_size (" + std::to_string(c.backbone.text.hidden_size) +
                            ")");
  return c;
}

GrootModelImpl::GrootModelImpl(const GrootModelConfig& config) : config_(config) {
  backbone = register_module("backbone", std::make_shared<torch::nn::Module>());
  auto wrapper = backbone->register_module("model", std::make_shared<torch::nn::Module>());
  qwen = wrapper->register_module("model", nn::Qwen3VLBackbone(config.backbone, config.select_layer));
  action_head = register_module("action_head", GrootActionHead(config.head));
}

GrootHeadInputs GrootModelImpl::encode(const GrootBatch& batch) {
  const auto features = qwen(batch.input_ids, batch.attention_mask, batch.pixel_values, batch.image_grid_thw);
  return {features, batch.attention_mask == 1, batch.input_ids == config_.backbone.image_token_id, batch.state,
          batch.embodiment_id};
}

torch::Tensor GrootModelImpl::loss(const GrootBatch& batch, const torch::Tensor& action,
                                   const torch::Tensor& action_mask, const torch::Tensor& noise,
                                   const torch::Tensor& time, const torch::Tensor& state_dropped) {
  return action_head->loss(encode(batch), action, action_mask, noise, time, state_dropped);
}

torch::Tensor GrootModelImpl::training_loss(const GrootBatch& batch, const torch::Tensor& action,
                                            const torch::Tensor& action_mask) {
  return action_head->training_loss(encode(batch), action, action_mask);
}

torch::Tensor GrootModelImpl::sample(const GrootBatch& batch, const torch::Tensor& noise) {
  return action_head->sample(encode(batch), noise);
}

void GrootModelImpl::load_weights(const std::filesystem::path& file, const std::string& prefix) {
  auto content = io::read_safetensors(file);
  const std::string embed = prefix + "backbone.model.model.language_model.embed_tokens.weight";
  const std::string head = prefix + "backbone.model.lm_head.weight";
  // The tied pair is stored under one of its names (LeRobot keeps lm_head, transformers' own
  // save_pretrained embed_tokens), or under both with the same values: embed_tokens is read.
  if (!content.find(embed))
    for (auto& [name, tensor] : content.tensors)
      if (name == head) name = embed;
  std::erase_if(content.tensors, [&](const auto& entry) { return entry.first == head; });
  nn::WeightLoadOptions options;
  options.prefix = prefix;
  nn::load_module_weights(*this, content, file.string(), options);
}

}  // namespace lrhost::policy::groot
