// PaliGemma config: pi0's fixed geometry and reading a config.json.
#include "host/nn/paligemma_config.hpp"

#include "host/config/config_reader.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {

PaliGemmaConfig PaliGemmaConfig::so400m_gemma_2b(int64_t image_size) {
  PaliGemmaConfig c;
  c.vision.hidden_size = 1152;
  c.vision.intermediate_size = 4304;
  c.vision.num_hidden_layers = 27;
  c.vision.num_attention_heads = 16;
  c.vision.num_channels = 3;
  c.vision.image_size = image_size;
  c.vision.patch_size = 14;
  c.vision.hidden_act = "gelu_pytorch_tanh";
  c.vision.layer_norm_eps = 1e-6;
  c.text = GemmaConfig::gemma_2b();
  c.projection_dim = 2048;
  c.validate("PaliGemma (So400m/14 + Gemma-2B)");
  return c;
}

void PaliGemmaConfig::validate(const std::string& where) const {
  vision.validate(where + ": vision_config");
  text.validate(where + ": text_config");
  if (projection_dim != text.hidden_size)
    throw util::ConfigError(where + ": 'vision_config.projection_dim' (" + std::to_string(projection_dim) +
                            ") must equal the language model's 'hidden_size' (" + std::to_string(text.hidden_size) +
                            ")");
}

PaliGemmaConfig paligemma_config_from_json(const nlohmann::json& top, const std::string& where) {
  if (!top.is_object()) throw util::ConfigError(where + ": expected a JSON object at the top level");
  auto object = [&](const char* key) -> nlohmann::json {
    auto it = top.find(key);
    if (it == top.end() || !it->is_object())
      throw util::ConfigError(where + ": '" + key + "' must be an object" +
                              (it == top.end() ? std::string(", but it is missing") : ", got " + it->dump()));
    return *it;
  };
  auto vision = object("vision_config");
  if (!vision.contains("model_type")) vision["model_type"] = "siglip_vision_model";
  PaliGemmaConfig c;
  c.vision = SiglipVisionConfig::from_json(vision, where + ": vision_config");
  c.text = gemma_config_from_json(object("text_config"), where + ": text_config");
  config::ConfigReader reader(vision, where + ": vision_config");
  c.projection_dim = reader.positive_integer("projection_dim", c.projection_dim);
  c.validate(where);
  return c;
}

PaliGemmaConfig read_paligemma_config(const std::filesystem::path& config_json) {
  const nlohmann::json top = nlohmann::json::parse(io::read_json_file(config_json, {}).dump());
  return paligemma_config_from_json(top, config_json.string());
}

}  // namespace lrhost::nn
