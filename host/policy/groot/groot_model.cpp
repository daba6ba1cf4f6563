// GR00T N1.7's network; see groot_model.hpp.
#include "host/policy/groot/groot_model.hpp"

#include <algorithm>

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

namespace {
std::string embed_name(const std::string& prefix) {
  return prefix + "backbone.model.model.language_model.embed_tokens.weight";
}
std::string lm_head_name(const std::string& prefix) {
  return prefix + "backbone.model.lm_head.weight";
}
}  // namespace

bool GrootModelImpl::read_tied_embedding(std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                         const std::string& prefix) {
  const std::string embed = embed_name(prefix), head = lm_head_name(prefix);
  const bool has_embed = std::any_of(tensors.begin(), tensors.end(), [&](const auto& e) { return e.first == embed; });
  bool renamed = false;
  if (!has_embed)
    for (auto& [name, tensor] : tensors)
      if (name == head) name = embed, renamed = true;
  std::erase_if(tensors, [&](const auto& entry) { return entry.first == head; });
  return renamed;
}

bool GrootModelImpl::write_tied_embedding(std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                          const std::string& prefix) {
  bool renamed = false;
  for (auto& [name, tensor] : tensors)
    if (name == embed_name(prefix)) name = lm_head_name(prefix), renamed = true;
  return renamed;
}

void GrootModelImpl::load_weights(const std::filesystem::path& file, const std::string& prefix) {
  auto content = io::read_safetensors(file);
  read_tied_embedding(content.tensors, prefix);
  nn::WeightLoadOptions options;
  options.prefix = prefix;
  nn::load_module_weights(*this, content, file.string(), options);
}

}  // namespace lrhost::policy::groot
