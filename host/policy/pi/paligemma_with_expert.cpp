// PaliGemmaWithExpert: module tree, dtypes, freezing, and the joint layer loop of modeling_pi0.py.
#include "host/policy/pi/paligemma_with_expert.hpp"

#include "host/nn/activation_checkpoint.hpp"
#include "host/nn/attention_core.hpp"
#include "host/nn/deferred_init.hpp"
#include "host/nn/forward_hooks.hpp"
#include "host/nn/rotary_embedding.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::pi {

// FSDP may wrap the decoder layers: the joint layer loop runs each pair inside both layers'
// hooked_forward (SigLIP's encoder layers run their own, host/nn/siglip_encoder.cpp).
[[maybe_unused]] const bool kGemmaDecoderLayerHookable = nn::register_hookable_module_type("GemmaDecoderLayer");

namespace {

torch::nn::Linear dead_head(int64_t hidden, int64_t vocab) {
  return torch::nn::Linear(torch::nn::LinearOptions(hidden, vocab).bias(false));
}

void freeze(torch::nn::Module& module) {
  for (auto& p : module.parameters()) p.set_requires_grad(false);
}

// The eager attention both passes use: q·kᵀ·head_dim^-0.5 in the query dtype, the additive fp32 mask,
// softmax in fp32 cast back (transformers' eager_attention_forward).
torch::Tensor eager(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                    const torch::Tensor& mask) {
  return nn::attend(query, key, value, mask, {.kernel = nn::AttentionKernel::eager});
}

}  // namespace

std::string layer_pair_of(const std::string& unit_path) {
  const std::string expert = ".gemma_expert.model.layers.";
  const auto at = unit_path.find(expert);
  if (at == std::string::npos) return unit_path;
  return unit_path.substr(0, at) + ".paligemma.model.language_model.layers." + unit_path.substr(at + expert.size());
}

PaliGemmaForConditionalGenerationImpl::PaliGemmaForConditionalGenerationImpl(const nn::PaliGemmaConfig& config) {
  lm_head = register_module("lm_head", dead_head(config.text.hidden_size, config.text.vocab_size));
  nn::release_parameters(*lm_head);  // deferred_init.hpp: one block at a time
  model = register_module("model", nn::PaliGemmaModel(config));
}

PiGemmaForCausalLMImpl::PiGemmaForCausalLMImpl(const nn::GemmaConfig& config) {
  lm_head = register_module("lm_head", dead_head(config.hidden_size, config.vocab_size));
  nn::release_parameters(*lm_head);
  model = register_module("model", nn::GemmaModel(config, /*with_embeddings=*/false));
}

PaliGemmaWithExpertImpl::PaliGemmaWithExpertImpl(const PiGeometry& geometry, const PaliGemmaWithExpertOptions& options)
    : options_(options) {
  paligemma = register_module("paligemma", PaliGemmaForConditionalGeneration(geometry.paligemma));
  gemma_expert = register_module("gemma_expert", PiGemmaForCausalLM(geometry.expert));
  if (options.bfloat16) {
    // to_bfloat16_for_selected_params: everything bf16 except vision tower, projector and every norm
    // (adaRMS dense included), with the rotary inverse frequencies rounded through bf16.
    nn::convert_to(*paligemma->lm_head, torch::kBFloat16);
    nn::convert_to(*gemma_expert->lm_head, torch::kBFloat16);
    language_model()->to_lerobot_bfloat16();
    expert_model()->to_lerobot_bfloat16();
  }
  // What never receives a gradient is frozen explicitly (LeRobot leaves it requires_grad and AdamW
  // skips it for having no gradient; the updates are the same, but frozen parameters also get no
  // gradient buffers, reductions or optimizer state under DDP and FSDP, and the plan counts them
  // right): the two dead heads, and the parts of the last VLM layer that only feed the unused prefix
  // output — its o_proj, MLP and post-attention norm — and the VLM's final norm.
  freeze(*paligemma->lm_head);
  freeze(*gemma_expert->lm_head);
  freeze(*language_model()->norm);
  auto last = language_model()->layer(language_model()->layers->size() - 1);
  freeze(*last->self_attn->o_proj);
  freeze(*last->mlp);
  freeze(*last->post_attention_layernorm);
  if (options.freeze_vision_encoder) freeze(*vlm()->vision_tower);
  if (options.train_expert_only) freeze(*paligemma);
  // SigLIP's layers are checkpointed only while the tower trains: a frozen tower keeps no activations.
  auto encoder = vlm()->vision_tower->vision_model->encoder;
  encoder->gradient_checkpointing =
      options.gradient_checkpointing && !options.freeze_vision_encoder && !options.train_expert_only;
  train(is_training());
}

void PaliGemmaWithExpertImpl::train(bool on) {
  torch::nn::Module::train(on);
  if (options_.freeze_vision_encoder) vlm()->vision_tower->eval();
  if (options_.train_expert_only) paligemma->eval();
}

bool PaliGemmaWithExpertImpl::layers_bfloat16() const {
  auto lm = language_model();
  return lm->layers->size() > 0 && lm->layer(0)->self_attn->q_proj->weight.scalar_type() == torch::kBFloat16;
}

torch::Tensor PaliGemmaWithExpertImpl::embed_image(const torch::Tensor& image) {
  auto features = vlm()->embed_image(image.scalar_type() == torch::kFloat32 ? image : image.to(torch::kFloat32));
  return features.scalar_type() == image.scalar_type() ? features : features.to(image.scalar_type());
}

torch::Tensor PaliGemmaWithExpertImpl::embed_language_tokens(const torch::Tensor& tokens) {
  return language_model()->embed(tokens);
}

std::vector<torch::Tensor> PaliGemmaWithExpertImpl::run_pair(int64_t index, const torch::Tensor& prefix,
                                                             const torch::Tensor& suffix, const torch::Tensor& cond,
                                                             const torch::Tensor& mask,
                                                             const torch::Tensor& positions) {
  const auto i = static_cast<std::size_t>(index);
  auto vlm_layer = language_model()->layer(i);
  auto expert_layer = expert_model()->layer(i);
  auto a = vlm_layer->begin(prefix);
  auto b = expert_layer->begin(suffix, cond);
  auto query = torch::cat({a.qkv.query, b.qkv.query}, 1);
  auto key = torch::cat({a.qkv.key, b.qkv.key}, 1);
  auto value = torch::cat({a.qkv.value, b.qkv.value}, 1);
  // compute_layer_complete takes the VLM's rotary embedding for both streams, in the query dtype.
  const auto rope = language_model()->rope_tables(positions, query.scalar_type());
  auto attended = nn::gemma_attend(query, key, value, rope, mask);
  const int64_t prefix_length = prefix.size(1);
  const bool last = index + 1 == static_cast<int64_t>(language_model()->layers->size());
  auto prefix_out = last ? torch::Tensor() : vlm_layer->finish(prefix, attended.slice(1, 0, prefix_length), a.gate);
  auto suffix_out = expert_layer->finish(suffix, attended.slice(1, prefix_length), b.gate, cond);
  return {prefix_out, suffix_out};
}

torch::Tensor PaliGemmaWithExpertImpl::forward(const torch::Tensor& prefix_in, const torch::Tensor& suffix_in,
                                               const torch::Tensor& mask, const torch::Tensor& positions,
                                               const torch::Tensor& cond) {
  auto prefix = prefix_in;
  auto suffix = suffix_in;
  const bool checkpointed = options_.gradient_checkpointing && is_training() && torch::GradMode::is_enabled();
  const int64_t depth = static_cast<int64_t>(language_model()->layers->size());
  for (int64_t i = 0; i < depth; ++i) {
    auto vlm_layer = language_model()->layer(static_cast<std::size_t>(i));
    auto expert_layer = expert_model()->layer(static_cast<std::size_t>(i));
    auto step = [&]() -> std::vector<torch::Tensor> {
      if (!checkpointed) return run_pair(i, prefix, suffix, cond, mask, positions);
      // Captured by value (the recompute runs in backward, after this loop): the pair index, mask and
      // positions; the streams and the condition are the segment's inputs, the pair's trainable
      // weights where its gradients go.
      auto body = [this, i, mask, positions](const std::vector<torch::Tensor>& in) {
        return run_pair(i, in[0], in[1], in[2], mask, positions);
      };
      return nn::checkpoint(body, {prefix, suffix, cond},
                            nn::trainable_parameters({vlm_layer.get(), expert_layer.get()}));
    };
    // Both layers' hooks (FSDP: gather before, reshard after, pre-backward hooks on the outputs, and
    // the streams as the inputs whose gradients end the pair's backward).
    std::vector<torch::Tensor> streams{prefix, suffix};
    if (cond.defined()) streams.push_back(cond);
    auto result =
        nn::hooked_forward(*vlm_layer, streams, [&] { return nn::hooked_forward(*expert_layer, streams, step); });
    prefix = result[0];
    suffix = result[1];
  }
  return expert_model()->norm->forward_with_gate(suffix, cond).hidden;
}

PiPrefixCache PaliGemmaWithExpertImpl::fill_cache(const torch::Tensor& prefix, const torch::Tensor& mask,
                                                  const torch::Tensor& positions) {
  auto lm = language_model();
  // PiGemmaModel.forward: the input cast to bf16 when the layers are bf16, RoPE tables in that dtype.
  auto h = layers_bfloat16() ? prefix.to(torch::kBFloat16) : prefix;
  const auto rope = lm->rope_tables(positions, h.scalar_type());
  PiPrefixCache cache;
  const std::size_t depth = lm->layers->size();
  for (std::size_t i = 0; i < depth; ++i) {
    auto layer = lm->layer(i);
    h = nn::hooked_forward(*layer, {h}, [&] {
      auto in = layer->begin(h);
      auto key = nn::apply_rotary_pos_emb(in.qkv.key, rope);
      cache.keys.push_back(key);
      cache.values.push_back(in.qkv.value);
      // The last layer's output feeds nothing (the prefix output is unused): only its keys/values.
      if (i + 1 == depth) return torch::Tensor();
      auto query = nn::apply_rotary_pos_emb(in.qkv.query, rope);
      return layer->finish(h, eager(query, key, in.qkv.value, mask), in.gate);
    });
  }
  return cache;
}

torch::Tensor PaliGemmaWithExpertImpl::forward_suffix(const torch::Tensor& suffix, const torch::Tensor& mask,
                                                      const torch::Tensor& positions, const PiPrefixCache& cache,
                                                      const torch::Tensor& cond) {
  auto expert = expert_model();
  const std::size_t depth = expert->layers->size();
  if (cache.keys.size() != depth)
    throw util::DataError("PaliGemmaWithExpert: the prefix cache has " + std::to_string(cache.keys.size()) +
                          " layers, the expert " + std::to_string(depth));
  auto h = expert->layer(0)->self_attn->q_proj->weight.scalar_type() == torch::kBFloat16 ? suffix.to(torch::kBFloat16)
                                                                                         : suffix;
  // The expert's own rotary embedding (same base and width as the VLM's).
  const auto rope = expert->rope_tables(positions, h.scalar_type());
  for (std::size_t i = 0; i < depth; ++i) {
    auto layer = expert->layer(i);
    h = nn::hooked_forward(*layer, {h}, [&] {
      auto in = layer->begin(h, cond);
      auto query = nn::apply_rotary_pos_emb(in.qkv.query, rope);
      // DynamicCache.update: the cached prefix first, then this step's suffix keys/values.
      auto key = torch::cat({cache.keys[i], nn::apply_rotary_pos_emb(in.qkv.key, rope)}, 1);
      auto value = torch::cat({cache.values[i], in.qkv.value}, 1);
      return layer->finish(h, eager(query, key, value, mask), in.gate, cond);
    });
  }
  return expert->norm->forward_with_gate(h, cond).hidden;
}

}  // namespace lrhost::policy::pi
