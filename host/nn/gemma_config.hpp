// Geometry and numerics of a Gemma decoder stack (transformers 5.5 GemmaConfig), plus the two fields
// LeRobot's PiGemma layers add (`use_adarms`, `adarms_cond_dim`: adaptive RMSNorm conditioned on a
// vector). The layer fields are LlamaConfig's, so the Llama attention and MLP modules build from it;
// only the defaults differ (Gemma's: GeGLU with tanh-gelu, head_dim 256, pad token 0).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "host/nn/llama_config.hpp"

namespace lrhost::nn {

struct GemmaConfig : LlamaConfig {
  int64_t pad_token_id = 0;     // embed_tokens' padding_idx: that row gets no gradient
  bool use_adarms = false;      // norms become adaptive (dense(cond) -> scale, shift, gate)
  int64_t adarms_cond_dim = 0;  // width of the condition vector when use_adarms

  GemmaConfig();  // transformers 5.5 GemmaConfig defaults (Gemma-7B geometry)

  // The two geometries of LeRobot's get_gemma_config (pi0/pi05): PaliGemma's Gemma-2B language model
  // and the Gemma-300M action expert; both 8 query heads × 256, 1 KV head, vocab 257,152.
  static GemmaConfig gemma_2b();
  static GemmaConfig gemma_300m();

  void validate(const std::string& where) const;
};

// Reads a GemmaConfig object (a PaliGemma config.json's `text_config`, or a plain Gemma config).
// `model_type` must be "gemma" (or absent); other keys are ignored. Errors name `where` and the key.
GemmaConfig gemma_config_from_json(const nlohmann::json& object, const std::string& where);

}  // namespace lrhost::nn
