// Gemma config: transformers' defaults, LeRobot's two pi0 geometries, reading from JSON.
#include "host/nn/gemma_config.hpp"

#include "host/config/config_reader.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {

GemmaConfig::GemmaConfig() {
  vocab_size = 256000;
  hidden_size = 3072;
  intermediate_size = 24576;
  num_hidden_layers = 28;
  num_attention_heads = 16;
  num_key_value_heads = 16;
  head_dim = 256;
  rms_norm_eps = 1e-6;
  rope_theta = 10000.0;
  hidden_act = "gelu_pytorch_tanh";
}

GemmaConfig GemmaConfig::gemma_2b() {
  GemmaConfig c;
  c.vocab_size = 257152;
  c.hidden_size = 2048;
  c.intermediate_size = 16384;
  c.num_hidden_layers = 18;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 1;
  c.head_dim = 256;
  return c;
}

GemmaConfig GemmaConfig::gemma_300m() {
  GemmaConfig c = gemma_2b();
  c.hidden_size = 1024;
  c.intermediate_size = 4096;
  return c;
}

void GemmaConfig::validate(const std::string& where) const {
  LlamaConfig::validate(where);
  if (hidden_act != "gelu_pytorch_tanh")
    throw util::ConfigError(where + ": 'hidden_act' must be 'gelu_pytorch_tanh' for Gemma, got '" + hidden_act + "'");
  if (attention_bias || mlp_bias)
    throw util::ConfigError(where + ": Gemma layers have no biases ('attention_bias' and 'mlp_bias' must be false)");
  if (pad_token_id < 0 || pad_token_id >= vocab_size)
    throw util::ConfigError(where + ": 'pad_token_id' must lie in [0, vocab_size), got " +
                            std::to_string(pad_token_id));
  if (use_adarms && adarms_cond_dim <= 0)
    throw util::ConfigError(where + ": 'adarms_cond_dim' must be positive when 'use_adarms' is true, got " +
                            std::to_string(adarms_cond_dim));
}

GemmaConfig gemma_config_from_json(const nlohmann::json& object, const std::string& where) {
  if (!object.is_object()) throw util::ConfigError(where + ": expected a JSON object, got " + object.dump());
  config::ConfigReader reader(object, where);
  const std::string model_type = reader.string("model_type", "gemma");
  if (model_type != "gemma")
    throw util::ConfigError(where + ": 'model_type' must be 'gemma', got '" + model_type + "'",
                            "Gemma-2/3 and other families norm and scale differently");
  // The Llama reader does the typed reading and the RoPE checks; it sees Gemma's defaults for the
  // keys the object leaves out, and a model_type it accepts.
  const GemmaConfig defaults;
  nlohmann::json llama = object;
  llama["model_type"] = "llama";
  auto fill = [&](const char* key, const nlohmann::json& value) {
    if (!llama.contains(key) || llama[key].is_null()) llama[key] = value;
  };
  fill("vocab_size", defaults.vocab_size);
  fill("hidden_size", defaults.hidden_size);
  fill("intermediate_size", defaults.intermediate_size);
  fill("num_hidden_layers", defaults.num_hidden_layers);
  fill("num_attention_heads", defaults.num_attention_heads);
  fill("num_key_value_heads", llama["num_attention_heads"]);
  fill("head_dim", defaults.head_dim);
  fill("hidden_act", defaults.hidden_act);
  GemmaConfig c;
  static_cast<LlamaConfig&>(c) = llama_config_from_json(llama, where);
  c.pad_token_id = reader.integer("pad_token_id", c.pad_token_id);
  c.use_adarms = reader.boolean("use_adarms", c.use_adarms);
  if (c.use_adarms) c.adarms_cond_dim = reader.integer("adarms_cond_dim", c.adarms_cond_dim);
  c.validate(where);
  return c;
}

}  // namespace lrhost::nn
