// SmolVLMWithExpert: construction (module names, expert geometry, cross-attention k/v), freezing, and
// the interleaved self-/cross-attention layer loop of smolvlm_with_expert.py.
#include "host/policy/smolvla/smolvlm_with_expert.hpp"

#include <algorithm>
#include <array>

#include "host/nn/activation_checkpoint.hpp"
#include "host/nn/attention_core.hpp"
#include "host/nn/forward_hooks.hpp"
#include "host/nn/linear.hpp"
#include "host/nn/rotary_embedding.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::smolvla {

// FSDP may wrap the decoder layers: SmolVLA's layer loop runs each layer index (the VLM layer and its
// paired expert layer) inside both layers' hooked_forward, although it calls their parts directly.
// The vision tower is a unit too: image embedding runs inside its hooked_forward.
[[maybe_unused]] const bool kLlamaDecoderLayerHookable = nn::register_hookable_module_type("LlamaDecoderLayer");
[[maybe_unused]] const bool kSiglipVisionHookable = nn::register_hookable_module_type("SiglipVisionTransformer");

namespace {

// SmolVLA's apply_rope: base max_wavelength = 10,000 whatever the checkpoint's rope_theta.
constexpr double kRopeBase = 10000.0;

// Python's int(x) for the positive widths computed here.
int64_t truncate(double x) {
  return static_cast<int64_t>(x);
}

}  // namespace

int64_t expert_intermediate_size(int64_t hidden) {
  int64_t size = 4 * truncate(2.0 * static_cast<double>(hidden) / 3.0);
  return 256 * ((size + 255) / 256);
}

ExpertModelImpl::ExpertModelImpl(const nn::LlamaConfig& config, int64_t num_layers,
                                 const std::vector<bool>& cross_layer, int64_t kv_width) {
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_layers; ++i)
    layers->push_back(nn::LlamaDecoderLayer(config, cross_layer[static_cast<std::size_t>(i)] ? kv_width : 0));
  norm = register_module("norm", nn::RMSNorm(config.hidden_size, config.rms_norm_eps));
}

SmolVLMWithExpertImpl::SmolVLMWithExpertImpl(const SmolVLAConfig& config, const nn::SmolVLMConfig& vlm_config)
    : freeze_vision_encoder_(config.freeze_vision_encoder),
      train_expert_only_(config.train_expert_only),
      cross_attention_(config.cross_attention()),
      gradient_checkpointing_(config.gradient_checkpointing),
      self_attn_every_n_layers_(config.self_attn_every_n_layers) {
  const auto& text = vlm_config.text;
  // LeRobot keeps text_model.layers[:num_vlm_layers]: a count above the VLM's layers keeps them all.
  num_vlm_layers_ =
      config.num_vlm_layers > 0 ? std::min(config.num_vlm_layers, text.num_hidden_layers) : text.num_hidden_layers;
  vlm = register_module("vlm", nn::SmolVLMForConditionalGeneration(vlm_config, num_vlm_layers_));

  // The expert: a copy of the text config, narrower (head count and head_dim are kept).
  nn::LlamaConfig expert = text;
  const double width = static_cast<double>(text.hidden_size) * config.expert_width_multiplier;
  expert.hidden_size = truncate(width);
  expert.intermediate_size = expert_intermediate_size(truncate(width));
  num_expert_layers_ = num_vlm_layers_;
  if (config.num_expert_layers > 0) {
    if (num_vlm_layers_ % config.num_expert_layers != 0)
      throw util::ConfigError(
          "policy 'smolvla': the VLM's " + std::to_string(num_vlm_layers_) +
          " layers are not a multiple of 'num_expert_layers' = " + std::to_string(config.num_expert_layers));
    num_expert_layers_ = config.num_expert_layers;
  }
  expert.num_hidden_layers = num_expert_layers_;
  std::vector<bool> cross(static_cast<std::size_t>(num_expert_layers_), false);
  if (cross_attention_)
    for (int64_t i = 0; i < num_expert_layers_; ++i)
      cross[static_cast<std::size_t>(i)] = !(self_attn_every_n_layers_ > 0 && i % self_attn_every_n_layers_ == 0);
  lm_expert = register_module("lm_expert",
                              ExpertModel(expert, num_expert_layers_, cross, text.num_key_value_heads * text.head_dim));
  // A self-attention layer paired with a cross-attention expert layer (or the reverse) cannot run: the
  // expert's k/v would read the wrong width. LeRobot builds such models (e.g. 8 expert layers for 16
  // VLM layers with cross_attn every 2) and fails in the first forward; say so at construction.
  for (int64_t i = 0; i < num_vlm_layers_; ++i) {
    if (i % expert_stride() != 0) continue;
    const int64_t e = i / expert_stride();
    if (cross[static_cast<std::size_t>(e)] == is_self_attention_layer(i))
      throw util::ConfigError(
          "policy 'smolvla': VLM layer " + std::to_string(i) + " (" +
              (is_self_attention_layer(i) ? "self-attention" : "cross-attention") + ") is paired with expert layer " +
              std::to_string(e) + " (" + (cross[static_cast<std::size_t>(e)] ? "cross" : "self") +
              "-attention k/v): num_expert_layers = " + std::to_string(num_expert_layers_) + " with " +
              std::to_string(num_vlm_layers_) + " VLM layers, attention_mode '" + config.attention_mode +
              "' and self_attn_every_n_layers = " + std::to_string(self_attn_every_n_layers_) +
              " cannot run (LeRobot fails in its first forward)",
          "use as many expert layers as VLM layers, or attention_mode = \"self_attn\"");
  }
  expert_hidden_size_ = expert.hidden_size;
  vlm_hidden_size_ = text.hidden_size;
  // SigLIP's layers are checkpointed only while the tower trains: a frozen tower keeps no activations
  // for backward anyway (nothing in it needs a gradient), so recomputing it would buy nothing.
  vlm->model->vision_model->encoder->gradient_checkpointing =
      config.gradient_checkpointing && !config.freeze_vision_encoder && !config.train_expert_only;
  apply_freezing();
}

void SmolVLMWithExpertImpl::apply_freezing() {
  auto freeze = [](torch::nn::Module& module) {
    for (auto& p : module.parameters()) p.set_requires_grad(false);
  };
  if (freeze_vision_encoder_) freeze(*vlm->model->vision_model);
  if (train_expert_only_) {
    freeze(*vlm);
  } else {
    // "To avoid unused params issue with distributed training": lm_head, the final text norm and the
    // last layer (two when the expert has fewer layers) produce nothing SmolVLA uses.
    freeze(*vlm->lm_head);
    vlm->model->text_model->norm->weight.set_requires_grad(false);
    std::vector<int64_t> last{num_vlm_layers_ - 1};
    if (num_vlm_layers_ != num_expert_layers_ && num_vlm_layers_ % num_expert_layers_ == 0)
      last.push_back(num_vlm_layers_ - 2);
    for (auto index : last) freeze(*vlm->model->text_model->layer(static_cast<std::size_t>(index)));
  }
  train(is_training());
}

void SmolVLMWithExpertImpl::train(bool on) {
  torch::nn::Module::train(on);
  if (freeze_vision_encoder_) vlm->model->vision_model->eval();
  if (train_expert_only_) vlm->eval();
}

torch::Tensor SmolVLMWithExpertImpl::embed_image(const torch::Tensor& image) {
  return nn::hooked_forward(*vlm->model->vision_model, {image}, [&] { return vlm->model->embed_image(image); });
}

torch::Tensor SmolVLMWithExpertImpl::embed_language_tokens(const torch::Tensor& tokens) {
  return vlm->model->text_model->embed(tokens);
}

nn::LlamaDecoderLayer SmolVLMWithExpertImpl::expert_layer(int64_t i) const {
  const int64_t stride = expert_stride();  // >= 1: the constructor requires the layer counts to divide
  if (i % stride != 0) return nullptr;
  return lm_expert->layer(static_cast<std::size_t>(i / stride));
}

bool SmolVLMWithExpertImpl::is_self_attention_layer(int64_t i) const {
  return !cross_attention_ || (self_attn_every_n_layers_ > 0 && i % self_attn_every_n_layers_ == 0);
}

torch::Tensor SmolVLMWithExpertImpl::attention(const torch::Tensor& mask, const torch::Tensor& query,
                                               const torch::Tensor& key, const torch::Tensor& value) const {
  nn::AttentionOptions options;
  options.kernel = nn::AttentionKernel::eager_fp32_scores;
  return nn::attend(query, key, value, mask, options);
}

std::vector<torch::Tensor> SmolVLMWithExpertImpl::joint_attention(LayerPair& layers, const Streams& inputs,
                                                                  const LayerContext& at) {
  // forward_attn_layer: the present streams' q/k/v side by side along the sequence, one attention.
  std::vector<torch::Tensor> queries, keys, values;
  for (std::size_t s = 0; s < 2; ++s) {
    if (!inputs[s].defined() || !layers[s]) continue;
    auto& attn = *layers[s]->self_attn;
    auto h = layers[s]->input_layernorm->forward(inputs[s]).to(attn.q_proj->weight.scalar_type());
    queries.push_back(attn.project_query(h));
    keys.push_back(attn.project_key(h));
    values.push_back(attn.project_value(h));
  }
  // Nothing to attend: in a denoising step, a VLM layer without an expert layer (fewer expert layers)
  // leaves the suffix as it is, as training does. (LeRobot fails here on torch.cat of no tensors.)
  if (queries.empty()) return {};
  auto query = torch::cat(queries, 1), key = torch::cat(keys, 1), value = torch::cat(values, 1);
  auto positions = at.positions;
  auto mask = at.mask;
  const int64_t length = query.size(1);
  if (length < positions.size(1)) {
    positions = positions.slice(1, 0, length);
    mask = mask.slice(1, 0, length).slice(2, 0, length);
  }
  query = nn::apply_rope_fp32(query, positions, kRopeBase);
  key = nn::apply_rope_fp32(key, positions, kRopeBase);
  const auto index = static_cast<std::size_t>(at.index);
  if (at.pass == Pass::fill_cache) {
    at.cache->keys[index] = key;
    at.cache->values[index] = value;
  } else if (at.pass == Pass::suffix) {
    key = torch::cat({at.cache->keys[index], key}, 1);
    value = torch::cat({at.cache->values[index], value}, 1);
  }
  return {attention(mask, query, key, value)};
}

std::vector<torch::Tensor> SmolVLMWithExpertImpl::cross_attention(LayerPair& layers, const Streams& inputs,
                                                                  const LayerContext& at) {
  // forward_cross_attn_layer: the prefix attends to itself (training), the expert to the VLM layer's
  // post-RoPE keys and values (from this pass or the cache).
  std::vector<torch::Tensor> outputs;
  torch::Tensor key, value, expert_positions;
  if (at.pass == Pass::train) {
    const int64_t length = inputs[0].size(1);
    auto prefix_positions = at.positions.slice(1, 0, length);
    expert_positions = at.positions.slice(1, length);
    auto& attn = *layers[0]->self_attn;
    auto h = layers[0]->input_layernorm->forward(inputs[0]).to(attn.q_proj->weight.scalar_type());
    auto query = nn::apply_rope_fp32(attn.project_query(h), prefix_positions, kRopeBase);
    key = nn::apply_rope_fp32(attn.project_key(h), prefix_positions, kRopeBase);
    value = attn.project_value(h);
    outputs.push_back(attention(at.mask.slice(1, 0, length).slice(2, 0, length), query, key, value));
  } else {
    expert_positions = at.positions;
    key = at.cache->keys[static_cast<std::size_t>(at.index)];
    value = at.cache->values[static_cast<std::size_t>(at.index)];
  }
  if (!layers[1]) {
    outputs.emplace_back();
    return outputs;
  }
  auto& attn = *layers[1]->self_attn;
  auto h = layers[1]->input_layernorm->forward(inputs[1]).to(attn.q_proj->weight.scalar_type());
  auto query = attn.project_query(h);
  const int64_t batch = key.size(0), length = key.size(1);
  // The expert's own k/v projections re-project the VLM's keys and values; no RoPE on them again.
  auto expert_key = attn.project_key(key.to(attn.k_proj->weight.scalar_type()).reshape({batch, length, -1}));
  auto expert_value = attn.project_value(value.to(attn.v_proj->weight.scalar_type()).reshape({batch, length, -1}));
  expert_positions = expert_positions - std::get<0>(expert_positions.min(1, /*keepdim=*/true));
  const int64_t suffix_length = inputs[1].size(1);
  auto expert_mask = at.mask.slice(1, at.mask.size(1) - suffix_length).slice(2, 0, expert_key.size(1));
  query = nn::apply_rope_fp32(query, expert_positions, kRopeBase);
  outputs.push_back(attention(expert_mask, query, expert_key, expert_value));
  return outputs;
}

std::vector<torch::Tensor> SmolVLMWithExpertImpl::finish_layer(LayerPair& layers, const Streams& inputs,
                                                               const std::vector<torch::Tensor>& att_outputs) {
  // Per stream: o_proj of its slice of the attention output, residual (in place, in o_proj's output
  // dtype), post-attention norm, MLP, residual. A stream without a layer passes through.
  std::vector<torch::Tensor> outputs(2);
  int64_t start = 0;
  for (std::size_t s = 0; s < 2; ++s) {
    if (!inputs[s].defined()) continue;
    if (!layers[s]) {
      outputs[s] = inputs[s];
      continue;
    }
    auto att = s < att_outputs.size() ? att_outputs[s] : att_outputs[0];
    const int64_t end = start + inputs[s].size(1);
    auto& attn = *layers[s]->self_attn;
    att = att.to(attn.o_proj->weight.scalar_type());
    auto out = nn::apply_linear(attn.o_proj, att.slice(1, start, end));
    out.add_(inputs[s]);
    auto residual = out.clone();
    out = layers[s]->mlp->forward(layers[s]->post_attention_layernorm->forward(out));
    out.add_(residual);
    outputs[s] = out;
    start = att_outputs.size() == 1 ? end : 0;  // one joint output: the streams are its consecutive slices
  }
  return outputs;
}

std::pair<torch::Tensor, torch::Tensor> SmolVLMWithExpertImpl::run_layers(torch::Tensor prefix, torch::Tensor suffix,
                                                                          const torch::Tensor& mask,
                                                                          const torch::Tensor& positions, Pass pass,
                                                                          PrefixCache* cache) {
  auto text_model = vlm->model->text_model;
  if (pass == Pass::fill_cache) {
    cache->keys.assign(static_cast<std::size_t>(num_vlm_layers_), torch::Tensor());
    cache->values.assign(static_cast<std::size_t>(num_vlm_layers_), torch::Tensor());
  }
  const bool checkpointed = gradient_checkpointing_ && pass == Pass::train && torch::GradMode::is_enabled();
  for (int64_t i = 0; i < num_vlm_layers_; ++i) {
    LayerPair layers{text_model->layer(static_cast<std::size_t>(i)), expert_layer(i)};
    const Streams inputs{prefix, suffix};
    const LayerContext at{i, mask, positions, pass, cache};
    auto step = [&]() -> std::vector<torch::Tensor> {
      if (!checkpointed) {
        auto att = pass == Pass::fill_cache || is_self_attention_layer(i) ? joint_attention(layers, inputs, at)
                                                                          : cross_attention(layers, inputs, at);
        return finish_layer(layers, inputs, att);
      }
      // Recomputed in backward, inside the layers' hooks: under FSDP the pre-backward hooks on this
      // segment's outputs gather both layers before the recompute runs. Captured by value (the
      // recompute runs after this loop): the layer index, the mask and positions; the streams are the
      // segment's inputs, the pair's trainable weights where its gradients go.
      auto body = [this, i, mask, positions](const std::vector<torch::Tensor>& streams) {
        const LayerContext context{i, mask, positions, Pass::train, nullptr};
        return run_layer(i, Streams{streams[0], streams[1]}, context);
      };
      return nn::checkpoint(body, {prefix, suffix},
                            nn::trainable_parameters({layers[0].get(), layers[1] ? layers[1].get() : nullptr}));
    };
    // Both layers' hooks (FSDP: gather before, reshard after, pre-backward hooks on the outputs, and
    // the streams as the inputs whose gradients end the layers' backward).
    const std::vector<torch::Tensor> streams{prefix, suffix};
    auto result = nn::hooked_forward(
        *layers[0], streams, [&] { return layers[1] ? nn::hooked_forward(*layers[1], streams, step) : step(); });
    prefix = result[0];
    suffix = result[1];
  }
  if (suffix.defined()) suffix = lm_expert->norm->forward(suffix);
  return {prefix, suffix};
}

std::vector<torch::Tensor> SmolVLMWithExpertImpl::run_layer(int64_t i, const Streams& inputs, const LayerContext& at) {
  LayerPair layers{vlm->model->text_model->layer(static_cast<std::size_t>(i)), expert_layer(i)};
  auto att = is_self_attention_layer(i) ? joint_attention(layers, inputs, at) : cross_attention(layers, inputs, at);
  return finish_layer(layers, inputs, att);
}

torch::Tensor SmolVLMWithExpertImpl::forward(const torch::Tensor& prefix, const torch::Tensor& suffix,
                                             const torch::Tensor& mask, const torch::Tensor& positions) {
  return run_layers(prefix, suffix, mask, positions, Pass::train, nullptr).second;
}

PrefixCache SmolVLMWithExpertImpl::fill_cache(const torch::Tensor& prefix, const torch::Tensor& mask,
                                              const torch::Tensor& positions) {
  PrefixCache cache;
  run_layers(prefix, {}, mask, positions, Pass::fill_cache, &cache);
  return cache;
}

torch::Tensor SmolVLMWithExpertImpl::forward_suffix(const torch::Tensor& suffix, const torch::Tensor& mask,
                                                    const torch::Tensor& positions, const PrefixCache& cache) {
  return run_layers({}, suffix, mask, positions, Pass::suffix, const_cast<PrefixCache*>(&cache)).second;
}

}  // namespace lrhost::policy::smolvla
