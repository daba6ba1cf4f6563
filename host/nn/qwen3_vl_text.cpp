// Qwen3-VL's language model; see qwen3_vl_text.hpp.
#include "host/nn/qwen3_vl_text.hpp"

#include "host/config/config_reader.hpp"
#include "host/nn/activation_checkpoint.hpp"
#include "host/nn/deferred_init.hpp"
#include "host/nn/forward_hooks.hpp"
#include "host/nn/linear.hpp"
#include "host/util/error.hpp"

namespace lrhost::nn {

Qwen3VLTextConfig Qwen3VLTextConfig::from_json(const nlohmann::json& object, const std::string& where) {
  if (!object.is_object()) throw util::ConfigError(where + ": expected a JSON object");
  Qwen3VLTextConfig c;
  config::ConfigReader reader(object, where);  // other keys (token ids, dtype, ...) are not the layers'
  c.vocab_size = reader.positive_integer("vocab_size", c.vocab_size);
  c.hidden_size = reader.positive_integer("hidden_size", c.hidden_size);
  c.intermediate_size = reader.positive_integer("intermediate_size", c.intermediate_size);
  c.num_hidden_layers = reader.positive_integer("num_hidden_layers", c.num_hidden_layers);
  c.num_attention_heads = reader.positive_integer("num_attention_heads", c.num_attention_heads);
  c.num_key_value_heads = reader.positive_integer("num_key_value_heads", c.num_attention_heads);
  c.head_dim = reader.positive_integer("head_dim", c.hidden_size / c.num_attention_heads);
  c.rms_norm_eps = reader.positive_number("rms_norm_eps", c.rms_norm_eps);
  c.attention_bias = reader.boolean("attention_bias", c.attention_bias);
  if (object.contains("hidden_act") && object["hidden_act"] != "silu")
    throw util::ConfigError(where + ": hidden_act " + object["hidden_act"].dump() +
                            " is not supported (only \"silu\")");
  // transformers 5 keeps rope settings in rope_parameters; config files written by others in rope_scaling.
  nlohmann::json rope = object.contains("rope_parameters") && object["rope_parameters"].is_object()
                            ? object["rope_parameters"]
                            : object.value("rope_scaling", nlohmann::json::object());
  if (rope.contains("rope_theta"))
    c.rope_theta = rope["rope_theta"].get<double>();
  else if (object.contains("rope_theta"))
    c.rope_theta = object["rope_theta"].get<double>();
  if (rope.contains("rope_type") && rope["rope_type"] != "default")
    throw util::ConfigError(where + ": rope_type " + rope["rope_type"].dump() + " is not supported (only \"default\")");
  if (rope.contains("mrope_interleaved") && rope["mrope_interleaved"] != true)
    throw util::ConfigError(where + ": mrope_interleaved = false is not supported (Qwen3-VL interleaves)");
  if (rope.contains("mrope_section")) c.mrope_section = rope["mrope_section"].get<std::vector<int64_t>>();
  if (c.mrope_section.size() != 3)
    throw util::ConfigError(where + ": mrope_section must list 3 sizes (temporal, height, width)");
  if (c.num_attention_heads % c.num_key_value_heads)
    throw util::ConfigError(where + ": num_attention_heads must be a multiple of num_key_value_heads");
  if (c.head_dim % 2 || 3 * std::max(c.mrope_section[1], c.mrope_section[2]) > c.head_dim / 2 + 2)
    throw util::ConfigError(where + ": mrope_section " + nlohmann::json(c.mrope_section).dump() +
                            " does not fit head_dim " + std::to_string(c.head_dim));
  return c;
}

Qwen3MropeRotary::Qwen3MropeRotary(const Qwen3VLTextConfig& config)
    : base_(config.head_dim, config.rope_theta), section_(config.mrope_section) {}

RotaryTables Qwen3MropeRotary::tables(const torch::Tensor& position_ids, c10::ScalarType dtype) const {
  auto ids = position_ids.dim() == 2 ? position_ids.unsqueeze(0).expand({3, -1, -1}) : position_ids;
  if (ids.dim() != 3 || ids.size(0) != 3)
    throw util::DataError("M-RoPE position ids must be (3, B, L) or (B, L), got " + c10::str(position_ids.sizes()));
  const auto inv_freq = base_.inv_freq().to(ids.device());
  // (3, B, L, half): one product each (transformers' matmul over a length-1 inner dimension).
  const auto freqs = ids.to(torch::kFloat).unsqueeze(-1) * inv_freq.view({1, 1, 1, -1});
  auto interleaved = freqs.select(0, 0).clone();  // T everywhere, then H and W on their frequencies
  const int64_t half = inv_freq.size(0);
  for (int64_t row = 1; row <= 2; ++row) {
    const int64_t end = std::min(3 * section_[static_cast<std::size_t>(row)], half);
    auto index = torch::arange(row, end, 3, torch::TensorOptions().dtype(torch::kLong).device(ids.device()));
    interleaved.index_copy_(-1, index, freqs.select(0, row).index_select(-1, index));
  }
  const auto emb = torch::cat({interleaved, interleaved}, -1);
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

Qwen3TextAttentionImpl::Qwen3TextAttentionImpl(const Qwen3VLTextConfig& config)
    : heads_(config.num_attention_heads), kv_heads_(config.num_key_value_heads), head_dim_(config.head_dim) {
  auto linear = [&](int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(config.attention_bias));
  };
  q_proj = register_module("q_proj", linear(config.hidden_size, heads_ * head_dim_));
  k_proj = register_module("k_proj", linear(config.hidden_size, kv_heads_ * head_dim_));
  v_proj = register_module("v_proj", linear(config.hidden_size, kv_heads_ * head_dim_));
  o_proj = register_module("o_proj", linear(heads_ * head_dim_, config.hidden_size));
  q_norm = register_module("q_norm", RMSNorm(head_dim_, config.rms_norm_eps));
  k_norm = register_module("k_norm", RMSNorm(head_dim_, config.rms_norm_eps));
}

torch::Tensor Qwen3TextAttentionImpl::forward(const torch::Tensor& x, const RotaryTables& rope,
                                              const torch::Tensor& mask) {
  const int64_t batch = x.size(0), length = x.size(1);
  auto q = q_norm(apply_linear(q_proj, x).view({batch, length, heads_, head_dim_}));
  auto k = k_norm(apply_linear(k_proj, x).view({batch, length, kv_heads_, head_dim_}));
  const auto v = apply_linear(v_proj, x).view({batch, length, kv_heads_, head_dim_});
  q = apply_rotary_pos_emb(q, rope);
  k = apply_rotary_pos_emb(k, rope);
  AttentionOptions options;
  options.causal = true;  // used only without a mask
  return apply_linear(o_proj, attend(q, k, v, mask, options));
}

Qwen3TextDecoderLayerImpl::Qwen3TextDecoderLayerImpl(const Qwen3VLTextConfig& config)
    : self_attn(register_module("self_attn", Qwen3TextAttention(config))),
      mlp(register_module("mlp", LlamaMLP(config.hidden_size, config.intermediate_size, false))),
      input_layernorm(register_module("input_layernorm", RMSNorm(config.hidden_size, config.rms_norm_eps))),
      post_attention_layernorm(
          register_module("post_attention_layernorm", RMSNorm(config.hidden_size, config.rms_norm_eps))) {}

torch::Tensor Qwen3TextDecoderLayerImpl::forward(const torch::Tensor& x, const RotaryTables& rope,
                                                 const torch::Tensor& mask) {
  const auto h = x + self_attn(input_layernorm(x), rope, mask);
  return h + mlp(post_attention_layernorm(h));
}

torch::Tensor causal_padding_mask(const torch::Tensor& attention_mask) {
  const int64_t length = attention_mask.size(1);
  const auto causal = torch::ones({length, length}, attention_mask.options().dtype(torch::kBool)).tril();
  return causal.unsqueeze(0) & attention_mask.to(torch::kBool).unsqueeze(1);  // (B, L, L)
}

Qwen3VLTextModelImpl::Qwen3VLTextModelImpl(const Qwen3VLTextConfig& config, int64_t layers)
    : config_(config), rotary_(config) {
  const int64_t count = layers < 0 ? config.num_hidden_layers : layers;
  if (count > config.num_hidden_layers)
    throw util::ConfigError("Qwen3-VL text model: " + std::to_string(count) + " layers asked of a model of " +
                            std::to_string(config.num_hidden_layers));
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(config.vocab_size, config.hidden_size));
  release_parameters(*embed_tokens);  // deferred_init.hpp: one block at a time
  this->layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < count; ++i) {
    Qwen3TextDecoderLayer layer(config);
    release_parameters(*layer);
    this->layers->push_back(layer);
  }
  norm = register_module("norm", RMSNorm(config.hidden_size, config.rms_norm_eps));
}

namespace {
[[maybe_unused]] const bool kQwen3TextDecoderLayerHookable = register_hookable_module_type("Qwen3TextDecoderLayer");
}  // namespace

torch::Tensor Qwen3VLTextModelImpl::run_layers(const torch::Tensor& inputs_embeds, const torch::Tensor& position_ids,
                                               const torch::Tensor& attention_mask,
                                               const torch::Tensor& visual_pos_masks,
                                               const std::vector<torch::Tensor>& deepstack, int64_t last) {
  const int64_t count = static_cast<int64_t>(layers->size());
  const int64_t stop = last < 0 ? count - 1 : last;
  if (stop >= count)
    throw util::DataError("Qwen3-VL text model: layer " + std::to_string(stop) + " asked of " + std::to_string(count));
  const auto rope = rotary_.tables(position_ids, inputs_embeds.scalar_type());
  const auto mask = causal_padding_mask(attention_mask).unsqueeze(1);  // (B, 1, L, L)
  auto h = inputs_embeds;
  const bool checkpointed = gradient_checkpointing && torch::GradMode::is_enabled();
  for (int64_t i = 0; i <= stop; ++i) {
    auto layer = layers->ptr<Qwen3TextDecoderLayerImpl>(static_cast<std::size_t>(i));
    auto run = [&]() -> torch::Tensor {
      if (!checkpointed) return layer->forward(h, rope, mask);
      auto body = [layer](const std::vector<torch::Tensor>& in) {
        return std::vector<torch::Tensor>{layer->forward(in[0], RotaryTables{in[1], in[2]}, in[3])};
      };
      return checkpoint(body, {h, rope.cos, rope.sin, mask}, trainable_parameters({layer.get()}))[0];
    };
    // Between the layer's hooks (forward_hooks.hpp): FSDP gathers a layer that is a unit.
    h = hooked_forward(*layer, {h}, run);
    if (i < static_cast<int64_t>(deepstack.size()) && visual_pos_masks.defined()) {
      // _deepstack_process: hidden[visual_pos_masks] += visual_embeds (a new tensor, not in place).
      const auto positions = visual_pos_masks.to(torch::kBool).flatten().nonzero().squeeze(-1);
      auto flat = h.reshape({-1, h.size(-1)});
      flat = flat.index_add(0, positions, deepstack[static_cast<std::size_t>(i)].to(h.scalar_type()));
      h = flat.view(h.sizes());
    }
  }
  return h;
}

}  // namespace lrhost::nn
