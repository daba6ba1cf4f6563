// The GR00T N1.7 action head's geometry and flow-matching constants: the fields of LeRobot's
// GR00TN17Config (groot_n1_7.py, GR00T_N1_7_DEFAULTS) that the action head reads, as a base
// checkpoint's config.json holds them. Defaults are LeRobot's; what the port does not implement
// (another DiT variant, positional embeddings inside the blocks) is refused by name.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace lrhost::policy::groot {

// diffusion_model_cfg / vl_self_attention_cfg: one stack of diffusers BasicTransformerBlocks.
struct TransformerStackConfig {
  int64_t num_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t attention_head_dim = 0;
  int64_t output_dim = 0;  // the DiT's proj_out_2 width (the DiT only)
  double dropout = 0.2;    // every block's four dropout sites
  bool final_dropout = true;
  int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
};

struct GrootHeadConfig {
  int64_t backbone_embedding_dim = 2048;  // the VL features' width (vlln, the DiT's cross-attention keys)
  int64_t hidden_size = 1024;             // state-encoder hidden, action-decoder in/hidden, DiT output
  int64_t input_embedding_dim = 1536;     // state/action token width (= the DiT's inner width)
  int64_t max_state_dim = 132, max_action_dim = 132;
  int64_t state_history_length = 1;
  int64_t action_horizon = 40;
  int64_t max_num_embodiments = 32;
  int64_t max_seq_len = 1024;  // rows of position_embedding
  bool add_pos_embed = true;
  bool use_vlln = true;
  int64_t attend_text_every_n_blocks = 2;
  int64_t num_inference_timesteps = 4;
  double noise_beta_alpha = 1.5, noise_beta_beta = 1.0, noise_s = 0.999;
  int64_t num_timestep_buckets = 1000;
  double state_dropout_prob = 0.2;
  TransformerStackConfig dit{32, 32, 48, 1024, 0.2, true};
  TransformerStackConfig vl_self_attention{4, 32, 64, 0, 0.2, true};

  // From a GR00T config.json (keys it does not read are ignored: the file holds the backbone's and
  // the processor's too). ConfigError naming `where` and the key for a value the port cannot build.
  static GrootHeadConfig from_json(const nlohmann::json& config, const std::string& where);
};

}  // namespace lrhost::policy::groot
