// Geometry and numerics of a Llama-style (SmolLM2) decoder stack, as transformers' LlamaConfig holds
// them, read from a Hugging Face config.json (a VLM's `text_config` object or a plain Llama config).
// Nothing here is specific to one model: SmolVLA's VLM (960 hidden, 15/5 heads), its action expert
// (720 hidden, head_dim 64 kept from the VLM) and other VLAs build from the same fields.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace lrhost::nn {

struct LlamaConfig {
  // Defaults are transformers 5.5's LlamaConfig defaults, used for keys a config.json leaves out.
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;  // transformers: defaults to num_attention_heads
  int64_t head_dim = 128;            // transformers: defaults to hidden_size / num_attention_heads
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;      // rope_parameters.rope_theta (transformers 5) or rope_theta (older files)
  bool attention_bias = false;      // q/k/v/o projections
  bool mlp_bias = false;            // gate/up/down projections
  std::string hidden_act = "silu";  // "silu" (Llama) or "gelu_pytorch_tanh" (Gemma-style MLPs)
  double initializer_range = 0.02;  // std of transformers' normal init (from-scratch modules only)

  // Throws util::ConfigError naming `where` and the offending field.
  void validate(const std::string& where) const;
  int64_t num_key_value_groups() const { return num_attention_heads / num_key_value_heads; }
};

// Reads a Llama config object (the keys of transformers' LlamaConfig; other keys are ignored because
// config.json files carry many that do not concern the layers). `where` names the object in errors,
// e.g. "config.json: text_config". Rejects rope types other than "default" and non-Llama model types.
LlamaConfig llama_config_from_json(const nlohmann::json& object, const std::string& where);

// Reads `text_config` of a VLM's config.json (SmolVLM, Idefics3, ...), or the top level when the
// file is a plain Llama config (model_type "llama"). Errors name the file and the key.
LlamaConfig read_llama_text_config(const std::filesystem::path& config_json);

}  // namespace lrhost::nn
