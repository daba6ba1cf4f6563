// SigLIP vision config: transformers' defaults per model_type, typed reading, validation.
#include "host/nn/siglip_config.hpp"

#include "host/config/config_reader.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {
namespace {

// transformers 5.5 configuration_smolvlm.py SmolVLMVisionConfig class defaults.
SiglipVisionConfig smolvlm_vision_defaults() {
  SiglipVisionConfig c;
  c.hidden_size = 1152;
  c.intermediate_size = 3072;
  c.num_hidden_layers = 12;
  c.num_attention_heads = 16;
  c.image_size = 224;
  c.patch_size = 32;
  return c;
}

// transformers 5.5 configuration_siglip.py SiglipVisionConfig class defaults (= the struct's).
SiglipVisionConfig siglip_vision_defaults() {
  return SiglipVisionConfig{};
}

}  // namespace

SiglipVisionConfig SiglipVisionConfig::from_json(const nlohmann::json& vision_config, const std::string& where) {
  if (!vision_config.is_object())
    throw util::ConfigError(where + ": expected an object with the vision tower's sizes, got " + vision_config.dump());
  config::ConfigReader reader(vision_config, where);
  const std::string model_type = reader.string("model_type", "smolvlm_vision");
  SiglipVisionConfig c;
  if (model_type == "smolvlm_vision" || model_type == "idefics3_vision")
    c = smolvlm_vision_defaults();
  else if (model_type == "siglip_vision_model")
    c = siglip_vision_defaults();
  else
    throw util::ConfigError(where +
                            ": 'model_type' must be one of 'smolvlm_vision', 'idefics3_vision', "
                            "'siglip_vision_model', got '" +
                            model_type + "'");
  for (const char* key : {"image_size", "patch_size"})
    if (vision_config.contains(key) && vision_config[key].is_array())
      throw util::NotImplemented(where + ": '" + key + "' as a [height, width] list is not supported; lrhost's " +
                                 "SigLIP takes square images and patches (one integer)");
  c.hidden_size = reader.positive_integer("hidden_size", c.hidden_size);
  c.intermediate_size = reader.positive_integer("intermediate_size", c.intermediate_size);
  c.num_hidden_layers = reader.integer("num_hidden_layers", c.num_hidden_layers);
  c.num_attention_heads = reader.positive_integer("num_attention_heads", c.num_attention_heads);
  c.num_channels = reader.positive_integer("num_channels", c.num_channels);
  c.image_size = reader.positive_integer("image_size", c.image_size);
  c.patch_size = reader.positive_integer("patch_size", c.patch_size);
  c.hidden_act = reader.string("hidden_act", c.hidden_act);
  c.layer_norm_eps = reader.positive_number("layer_norm_eps", c.layer_norm_eps);
  c.attention_dropout = reader.number("attention_dropout", c.attention_dropout);
  c.validate(where);
  return c;
}

void SiglipVisionConfig::validate(const std::string& where) const {
  auto fail = [&](const std::string& message) { throw util::ConfigError(where + ": " + message); };
  auto positive = [&](const char* key, int64_t value) {
    if (value <= 0) fail(std::string("'") + key + "' must be a positive integer, got " + std::to_string(value));
  };
  positive("hidden_size", hidden_size);
  positive("intermediate_size", intermediate_size);
  positive("num_attention_heads", num_attention_heads);
  positive("num_channels", num_channels);
  positive("image_size", image_size);
  positive("patch_size", patch_size);
  if (num_hidden_layers < 0) fail("'num_hidden_layers' must be >= 0, got " + std::to_string(num_hidden_layers));
  if (hidden_size % num_attention_heads != 0)
    fail("'hidden_size' (" + std::to_string(hidden_size) + ") must be divisible by 'num_attention_heads' (" +
         std::to_string(num_attention_heads) + ")");
  if (patch_size > image_size)
    fail("'patch_size' (" + std::to_string(patch_size) + ") must not exceed 'image_size' (" +
         std::to_string(image_size) + ")");
  if (hidden_act != "gelu_pytorch_tanh" && hidden_act != "gelu")
    fail("'hidden_act' must be 'gelu_pytorch_tanh' or 'gelu', got '" + hidden_act + "'");
  if (!(layer_norm_eps > 0)) fail("'layer_norm_eps' must be > 0, got " + std::to_string(layer_norm_eps));
  if (!(attention_dropout >= 0 && attention_dropout < 1))
    fail("'attention_dropout' must be in [0, 1), got " + std::to_string(attention_dropout));
}

}  // namespace lrhost::nn
