// Llama config: reading from config.json with transformers' defaults, and validation.
#include "host/nn/llama_config.hpp"

#include "host/config/config_reader.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {

using util::ConfigError;

namespace {

// transformers 5 keeps RoPE settings in `rope_parameters: {rope_theta, rope_type}`; files written by
// transformers 4 carry `rope_theta` and `rope_scaling` (null or {"type" | "rope_type": ...}). Only the
// plain ("default") rotary embedding is implemented: any scaled variant must fail, not run unscaled.
double read_rope_theta(const nlohmann::json& object, const std::string& where, double fallback) {
  auto rope_type_of = [&](const nlohmann::json& table, const std::string& key) -> std::string {
    for (const char* name : {"rope_type", "type"}) {
      auto it = table.find(name);
      if (it == table.end() || it->is_null()) continue;
      if (!it->is_string())
        throw ConfigError(where + ": '" + key + "." + name + "' must be a string, got " + it->dump());
      return it->get<std::string>();
    }
    return "default";
  };
  auto require_default = [&](const std::string& type, const std::string& key) {
    if (type != "default")
      throw ConfigError(
          where + ": '" + key + "' has rope_type '" + type + "', but only the default rotary embedding is implemented",
          "scaled RoPE variants (linear, dynamic, yarn, llama3, ...) would change every position; "
          "use a model with rope_type 'default'");
  };
  double theta = fallback;
  config::ConfigReader reader(object, where);
  theta = reader.positive_number("rope_theta", theta);
  if (auto it = object.find("rope_scaling"); it != object.end() && !it->is_null()) {
    if (!it->is_object()) throw ConfigError(where + ": 'rope_scaling' must be an object or null, got " + it->dump());
    require_default(rope_type_of(*it, "rope_scaling"), "rope_scaling");
  }
  if (auto it = object.find("rope_parameters"); it != object.end() && !it->is_null()) {
    if (!it->is_object()) throw ConfigError(where + ": 'rope_parameters' must be an object or null, got " + it->dump());
    require_default(rope_type_of(*it, "rope_parameters"), "rope_parameters");
    config::ConfigReader rope(*it, where + ": rope_parameters");
    theta = rope.positive_number("rope_theta", theta);
  }
  return theta;
}

}  // namespace

void LlamaConfig::validate(const std::string& where) const {
  auto positive = [&](const char* key, int64_t value) {
    if (value <= 0)
      throw ConfigError(where + ": '" + key + "' must be a positive integer, got " + std::to_string(value));
  };
  positive("vocab_size", vocab_size);
  positive("hidden_size", hidden_size);
  positive("intermediate_size", intermediate_size);
  positive("num_hidden_layers", num_hidden_layers);
  positive("num_attention_heads", num_attention_heads);
  positive("num_key_value_heads", num_key_value_heads);
  positive("head_dim", head_dim);
  if (num_attention_heads % num_key_value_heads != 0)
    throw ConfigError(where + ": 'num_attention_heads' (" + std::to_string(num_attention_heads) +
                      ") must be a multiple of 'num_key_value_heads' (" + std::to_string(num_key_value_heads) + ")");
  if (head_dim % 2 != 0)
    throw ConfigError(where + ": 'head_dim' must be even for the rotary embedding, got " + std::to_string(head_dim));
  if (!(rms_norm_eps > 0))
    throw ConfigError(where + ": 'rms_norm_eps' must be > 0, got " + std::to_string(rms_norm_eps));
  if (!(rope_theta > 0)) throw ConfigError(where + ": 'rope_theta' must be > 0, got " + std::to_string(rope_theta));
  if (hidden_act != "silu" && hidden_act != "gelu_pytorch_tanh")
    throw ConfigError(where + ": 'hidden_act' must be one of 'silu', 'gelu_pytorch_tanh', got '" + hidden_act + "'");
}

LlamaConfig llama_config_from_json(const nlohmann::json& object, const std::string& where) {
  if (!object.is_object()) throw ConfigError(where + ": expected a JSON object, got " + object.dump());
  config::ConfigReader reader(object, where);
  const std::string model_type = reader.string("model_type", "llama");
  if (model_type != "llama")
    throw ConfigError(where + ": 'model_type' must be 'llama', got '" + model_type + "'",
                      "the Llama layers (RMSNorm weight, SiLU MLP) would compute a different model");
  LlamaConfig c;
  c.vocab_size = reader.integer("vocab_size", c.vocab_size);
  c.hidden_size = reader.integer("hidden_size", c.hidden_size);
  c.intermediate_size = reader.integer("intermediate_size", c.intermediate_size);
  c.num_hidden_layers = reader.integer("num_hidden_layers", c.num_hidden_layers);
  c.num_attention_heads = reader.integer("num_attention_heads", c.num_attention_heads);
  c.num_key_value_heads = reader.integer("num_key_value_heads", c.num_attention_heads);
  c.head_dim = reader.integer("head_dim", c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0);
  c.rms_norm_eps = reader.number("rms_norm_eps", c.rms_norm_eps);
  c.attention_bias = reader.boolean("attention_bias", c.attention_bias);
  c.mlp_bias = reader.boolean("mlp_bias", c.mlp_bias);
  c.hidden_act = reader.string("hidden_act", c.hidden_act);
  c.initializer_range = reader.number("initializer_range", c.initializer_range);
  c.rope_theta = read_rope_theta(object, where, c.rope_theta);
  const double dropout = reader.number("attention_dropout", 0.0);
  if (dropout != 0.0)
    throw ConfigError(where + ": 'attention_dropout' must be 0, got " + std::to_string(dropout),
                      "attention dropout is not implemented");
  c.validate(where);
  return c;
}

LlamaConfig read_llama_text_config(const std::filesystem::path& config_json) {
  const nlohmann::json top = nlohmann::json::parse(io::read_json_file(config_json, {}).dump());
  const std::string file = config_json.string();
  if (!top.is_object()) throw ConfigError(file + ": expected a JSON object at the top level");
  if (auto it = top.find("text_config"); it != top.end()) {
    if (!it->is_object()) throw ConfigError(file + ": 'text_config' must be an object, got " + it->dump());
    return llama_config_from_json(*it, file + ": text_config");
  }
  if (top.value("model_type", std::string()) == "llama") return llama_config_from_json(top, file);
  throw ConfigError(file + ": missing 'text_config' (and the file is not a plain Llama config)",
                    "expected a VLM config.json such as SmolVLM2's, with a Llama 'text_config'");
}

}  // namespace lrhost::nn
