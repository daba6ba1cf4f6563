// Reading the action head's fields of a GR00T config.json; see groot_head_config.hpp.
#include "host/policy/groot/groot_head_config.hpp"

#include "host/util/error.hpp"

namespace lrhost::policy::groot {
namespace {

struct Reader {
  const nlohmann::json& json;
  std::string where;

  const nlohmann::json* find(const char* key) const {
    return json.is_object() && json.contains(key) && !json[key].is_null() ? &json[key] : nullptr;
  }
  void integer(const char* key, int64_t& out, int64_t minimum = 1) const {
    if (const auto* value = find(key)) {
      if (!value->is_number_integer() || value->get<int64_t>() < minimum)
        throw util::ConfigError(where + ": '" + key + "' must be an integer >= " + std::to_string(minimum) + ", got " +
                                value->dump());
      out = value->get<int64_t>();
    }
  }
  void number(const char* key, double& out) const {
    if (const auto* value = find(key)) {
      if (!value->is_number())
        throw util::ConfigError(where + ": '" + key + "' must be a number, got " + value->dump());
      out = value->get<double>();
    }
  }
  void boolean(const char* key, bool& out) const {
    if (const auto* value = find(key)) {
      if (!value->is_boolean()) throw util::ConfigError(where + ": '" + key + "' must be true or false");
      out = value->get<bool>();
    }
  }
  // A value the port builds only one way: absent, or equal to `expected`.
  void only(const char* key, const nlohmann::json& expected, const std::string& why) const {
    if (const auto* value = find(key); value && *value != expected)
      throw util::ConfigError(
          where + ": '" + key + "' = " + value->dump() + " is not supported (only " + expected.dump() + ")", why);
  }
};

TransformerStackConfig read_stack(const Reader& parent, const char* key, TransformerStackConfig stack, bool is_dit) {
  const nlohmann::json* json = parent.find(key);
  if (!json) return stack;
  if (!json->is_object()) throw util::ConfigError(parent.where + ": '" + key + "' must be an object");
  Reader reader{*json, parent.where + ": " + key};
  reader.integer("num_layers", stack.num_layers, 0);
  reader.integer("num_attention_heads", stack.num_attention_heads);
  reader.integer("attention_head_dim", stack.attention_head_dim);
  if (is_dit) reader.integer("output_dim", stack.output_dim);
  reader.number("dropout", stack.dropout);
  reader.boolean("final_dropout", stack.final_dropout);
  const std::string port = "lrhost's GR00T port builds GR00T N1.7's blocks as LeRobot 0.6.1 configures them";
  if (const auto* value = reader.find("positional_embeddings"))
    throw util::ConfigError(
        reader.where + ": 'positional_embeddings' = " + value->dump() + " is not supported (only null)", port);
  reader.only("activation_fn", "gelu-approximate", port);
  reader.only("attention_bias", true, port);
  reader.only("upcast_attention", false, port);
  if (is_dit) {
    reader.only("norm_type", "ada_norm", port);
    reader.only("interleave_self_attention", true, "GR00T N1.7's AlternateVLDiT alternates cross and self attention");
    reader.only("norm_elementwise_affine", false, port);
    reader.only("norm_eps", 1e-5, port);
  }
  if (stack.dropout < 0 || stack.dropout >= 1)
    throw util::ConfigError(reader.where + ": 'dropout' must be in [0, 1), got " + std::to_string(stack.dropout));
  return stack;
}

}  // namespace

GrootHeadConfig GrootHeadConfig::from_json(const nlohmann::json& config, const std::string& where) {
  if (!config.is_object()) throw util::ConfigError(where + ": expected a JSON object");
  GrootHeadConfig c;
  Reader reader{config, where};
  reader.integer("backbone_embedding_dim", c.backbone_embedding_dim);
  reader.integer("hidden_size", c.hidden_size);
  reader.integer("input_embedding_dim", c.input_embedding_dim);
  reader.integer("max_state_dim", c.max_state_dim);
  reader.integer("max_action_dim", c.max_action_dim);
  reader.integer("state_history_length", c.state_history_length);
  reader.integer("action_horizon", c.action_horizon);
  reader.integer("max_num_embodiments", c.max_num_embodiments);
  reader.integer("max_seq_len", c.max_seq_len);
  reader.boolean("add_pos_embed", c.add_pos_embed);
  reader.boolean("use_vlln", c.use_vlln);
  reader.integer("attend_text_every_n_blocks", c.attend_text_every_n_blocks);
  reader.integer("num_inference_timesteps", c.num_inference_timesteps);
  reader.number("noise_beta_alpha", c.noise_beta_alpha);
  reader.number("noise_beta_beta", c.noise_beta_beta);
  reader.number("noise_s", c.noise_s);
  reader.integer("num_timestep_buckets", c.num_timestep_buckets);
  reader.number("state_dropout_prob", c.state_dropout_prob);
  reader.only("use_alternate_vl_dit", true, "GR00T N1.7 uses the AlternateVLDiT; the plain DiT is N1.5's");
  c.dit = read_stack(reader, "diffusion_model_cfg", c.dit, true);
  c.vl_self_attention = read_stack(reader, "vl_self_attention_cfg", c.vl_self_attention, false);
  if (c.dit.inner_dim() != c.input_embedding_dim)
    throw util::ConfigError(where + ": diffusion_model_cfg's heads x head_dim (" + std::to_string(c.dit.inner_dim()) +
                            ") must equal input_embedding_dim (" + std::to_string(c.input_embedding_dim) + ")");
  if (c.dit.output_dim != c.hidden_size)
    throw util::ConfigError(where + ": diffusion_model_cfg.output_dim (" + std::to_string(c.dit.output_dim) +
                            ") must equal hidden_size (" + std::to_string(c.hidden_size) +
                            "): the action decoder reads the DiT's output");
  if (c.vl_self_attention.num_layers > 0 && c.vl_self_attention.inner_dim() != c.backbone_embedding_dim)
    throw util::ConfigError(where + ": vl_self_attention_cfg's heads x head_dim (" +
                            std::to_string(c.vl_self_attention.inner_dim()) + ") must equal backbone_embedding_dim (" +
                            std::to_string(c.backbone_embedding_dim) + ")");
  if (c.action_horizon > c.max_seq_len && c.add_pos_embed)
    throw util::ConfigError(where + ": action_horizon (" + std::to_string(c.action_horizon) +
                            ") exceeds max_seq_len (" + std::to_string(c.max_seq_len) + "), the position table's rows");
  return c;
}

}  // namespace lrhost::policy::groot
