// GrootPolicy: batch checks, the tuning switches, autocast, parameter groups, presets, inference.
#include "host/policy/groot/groot_policy.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <regex>
#include <set>

#include "host/io/hf_cache.hpp"
#include "host/nn/autocast.hpp"
#include "host/nn/deferred_init.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::groot {

namespace {

// A processed entry with a leading batch dimension of `batch` rows and `dims` dimensions.
const torch::Tensor& processed(const Batch& batch, const std::string& key, int64_t dims) {
  auto found = batch.find(key);
  if (found == batch.end())
    throw util::DataError("groot policy: the batch has no '" + key + "'",
                          "preprocess the batch with the policy's processors (policy:preprocess(batch)): GR00T's "
                          "pack and VLM-encode steps make its inputs");
  if (found->second.dim() != dims)
    throw util::DataError("groot policy: '" + key + "' must have " + std::to_string(dims) + " dimensions, got " +
                          c10::str(found->second.sizes()));
  return found->second;
}

void freeze(torch::nn::Module& module) {
  for (auto& p : module.parameters()) p.set_requires_grad(false);
}

}  // namespace

GrootPolicy::GrootPolicy(GrootConfig config, GrootGeometry geometry)
    : config_(std::move(config)), geometry_(std::move(geometry)) {
  check_padded_dims(config_, geometry_);
  auto model_config = geometry_.model;
  if (config_.num_inference_timesteps) model_config.head.num_inference_timesteps = *config_.num_inference_timesteps;
  model_ = register_module("_groot_model", GrootModel(model_config));
  nn::release_parameters(*model_);  // what the blocks left (mergers, norms): nn/deferred_init.hpp
  if (config_.gradient_checkpointing) {
    // The head's stacks always train by default; the backbone's only store activations when tuned,
    // and checkpointing a frozen stack would only recompute it (checkpoint skips segments without
    // a gradient).
    model_->action_head->model->gradient_checkpointing = true;
    if (model_->action_head->vl_self_attention) model_->action_head->vl_self_attention->gradient_checkpointing = true;
    model_->qwen->visual->gradient_checkpointing = true;
    model_->qwen->language_model->gradient_checkpointing = true;
  }
  set_trainable_parameters();
  reset();
}

void GrootPolicy::set_trainable_parameters() {
  for (auto& p : parameters()) p.set_requires_grad(true);
  auto& qwen = *model_->qwen;
  if (!config_.tune_llm) freeze(*qwen.language_model);
  if (!config_.tune_visual) freeze(*qwen.visual);
  const auto layers = static_cast<int64_t>(qwen.language_model->layers->size());
  for (int64_t i = std::max<int64_t>(0, layers - config_.tune_top_llm_layers); i < layers; ++i)
    for (auto& p : qwen.language_model->layers[static_cast<std::size_t>(i)]->parameters()) p.set_requires_grad(true);
  auto& head = *model_->action_head;
  if (!config_.tune_projector) {
    freeze(*head.state_encoder);
    freeze(*head.action_encoder);
    freeze(*head.action_decoder);
    if (head.position_embedding) freeze(*head.position_embedding);
  }
  if (!config_.tune_diffusion_model) freeze(*head.model);
  if (!config_.tune_vlln) {
    if (head.vlln) freeze(*head.vlln);
    if (head.vl_self_attention) freeze(*head.vl_self_attention);
  }
}

void GrootPolicy::train(bool on) {
  torch::nn::Module::train(on);
  if (!on) return;
  auto& qwen = *model_->qwen;
  if (!config_.tune_llm) qwen.language_model->eval();
  if (!config_.tune_visual) qwen.visual->eval();
  auto& head = *model_->action_head;
  if (!config_.tune_projector) {
    head.state_encoder->eval();
    head.action_encoder->eval();
    head.action_decoder->eval();
    if (head.position_embedding) head.position_embedding->eval();
  }
  if (!config_.tune_diffusion_model) head.model->eval();
  if (!config_.tune_vlln) {
    if (head.vlln) head.vlln->eval();
    if (head.vl_self_attention) head.vl_self_attention->eval();
  }
}

std::vector<std::string> GrootPolicy::adapt_pretrained_tensors(
    std::vector<std::pair<std::string, torch::Tensor>>& tensors) const {
  // A base checkpoint (GR00TN17.save_pretrained) names the network's tensors without the policy's
  // `_groot_model.` prefix.
  const std::string prefix = "_groot_model.";
  const bool raw = !tensors.empty() && std::none_of(tensors.begin(), tensors.end(), [&](const auto& entry) {
    return entry.first.rfind(prefix, 0) == 0;
  });
  if (raw)
    for (auto& [name, tensor] : tensors) name = prefix + name;
  GrootModelImpl::read_tied_embedding(tensors, prefix);
  return {};  // LeRobot's own layouts: nothing worth a note
}

void GrootPolicy::adapt_saved_tensors(std::vector<std::pair<std::string, torch::Tensor>>& tensors) const {
  GrootModelImpl::write_tied_embedding(tensors, "_groot_model.");
}

GrootBatch GrootPolicy::groot_batch(const Batch& batch) const {
  const auto& ids = processed(batch, "input_ids", 2);
  const int64_t rows = ids.size(0);
  const auto& pixels = processed(batch, "pixel_values", 3);
  const auto& grids = processed(batch, "image_grid_thw", 3);
  const auto& state = processed(batch, "state", 3);
  const auto& embodiment = processed(batch, "embodiment_id", 1);
  for (const auto* entry : {&pixels, &grids, &state, &embodiment})
    if (entry->size(0) != rows)
      throw util::DataError("groot policy: the processed batch's entries disagree on the batch size (input_ids has " +
                            std::to_string(rows) + " rows, another entry " + std::to_string(entry->size(0)) + ")");
  if (state.size(2) != config_.max_state_dim)
    throw util::DataError("groot policy: 'state' must be (B, 1, " + std::to_string(config_.max_state_dim) + "), got " +
                          c10::str(state.sizes()));
  // The model takes the images of the whole batch in prompt order, row by row.
  return {ids,
          processed(batch, "attention_mask", 2),
          pixels.reshape({-1, pixels.size(2)}).to(torch::kFloat32),
          grids.reshape({-1, 3}),
          state.to(torch::kFloat32),
          embodiment};
}

PolicyOutput GrootPolicy::forward(const Batch& batch) {
  const auto inputs = groot_batch(batch);
  const auto& action = processed(batch, "action", 3);
  const auto& mask = processed(batch, "action_mask", 3);
  if (action.size(2) != config_.max_action_dim || !mask.sizes().equals(action.sizes()))
    throw util::DataError("groot policy: 'action' and 'action_mask' must be (B, H, " +
                          std::to_string(config_.max_action_dim) + "), got " + c10::str(action.sizes()) + " and " +
                          c10::str(mask.sizes()));
  std::optional<nn::AutocastSpec> autocast;
  if (config_.use_bf16) autocast = nn::AutocastSpec{action.device().type(), torch::kBFloat16};
  nn::AutocastGuard guard(autocast);
  PolicyOutput out;
  auto noise = batch.find("noise");
  auto time = batch.find("time");
  if ((noise == batch.end()) != (time == batch.end()))
    throw util::DataError("groot policy: give both 'noise' and 'time' (the flow-matching draws) or neither");
  // Given draws (tests, equivalence runs) replace LeRobot's; the dropouts still draw in train mode.
  out.loss = noise != batch.end() ? model_->loss(inputs, action.to(torch::kFloat32), mask.to(torch::kFloat32),
                                                 noise->second.to(torch::kFloat32), time->second.to(torch::kFloat32))
                                  : model_->training_loss(inputs, action.to(torch::kFloat32), mask.to(torch::kFloat32));
  out.loss = out.loss.to(torch::kFloat32);
  return out;
}

int64_t GrootPolicy::checkpoint_action_horizon() const {
  // infer_groot_n1_7_action_horizon: len(modality_configs[tag].action.delta_indices) of the base
  // checkpoint, here capped by the model's own horizon.
  const auto& layout = geometry_.assets.layout;
  const int64_t model = geometry_.model.head.action_horizon;
  return layout.valid_action_horizon ? std::min(model, *layout.valid_action_horizon) : model;
}

int64_t GrootPolicy::prediction_horizon() const {
  return std::max<int64_t>(1, std::min({checkpoint_action_horizon(), config_.chunk_size, config_.n_action_steps}));
}

torch::Tensor GrootPolicy::predict_action_chunk(const Batch& batch) {
  torch::NoGradGuard no_grad;
  eval();
  const auto inputs = groot_batch(batch);
  const auto& head = model_->action_head->config();
  auto noise_entry = batch.find("noise");
  std::optional<nn::AutocastSpec> autocast;
  if (config_.use_bf16) autocast = nn::AutocastSpec{inputs.state.device().type(), torch::kBFloat16};
  nn::AutocastGuard guard(autocast);
  // get_action draws x_0 after the backbone ran (randn has no other draw before it in eval mode).
  auto encoded = model_->encode(inputs);
  const auto noise =
      noise_entry != batch.end()
          ? noise_entry->second.to(torch::kFloat32)
          : torch::randn({inputs.state.size(0), head.action_horizon, head.max_action_dim}, inputs.state.options());
  auto actions = model_->action_head->sample(encoded, noise);
  return actions.slice(1, 0, prediction_horizon()).slice(2, 0, config_.action_feature()->shape[0]);
}

torch::Tensor GrootPolicy::select_action(const Batch& batch) {
  torch::NoGradGuard no_grad;
  eval();
  // _resolve_action_queue_steps: n_action_steps, at most the checkpoint's horizon; NVIDIA's LIBERO
  // rollout replans after 8 steps of a checkpoint's chunk (infer_groot_n1_7_action_execution_horizon).
  int64_t steps = std::min(config_.n_action_steps, checkpoint_action_horizon());
  if (config_.embodiment_tag == "libero_sim" && geometry_.assets.layout.valid_action_horizon)
    steps = std::min<int64_t>(steps, 8);
  return action_queue_.next(steps, [&] { return predict_action_chunk(batch); });
}

std::optional<Batch> GrootPolicy::example_batch(int64_t batch_size) const {
  const auto& backbone = geometry_.backbone_config;
  const auto& vision = geometry_.model.backbone.vision;
  const int64_t side_h = geometry_.assets.image_target_size.at(0) / vision.patch_size;
  const int64_t side_w = geometry_.assets.image_target_size.at(1) / vision.patch_size;
  const int64_t tokens = side_h * side_w / (vision.spatial_merge_size * vision.spatial_merge_size);
  // Every camera's frames (a base checkpoint's video horizon) are images of the prompt.
  const auto cameras =
      static_cast<int64_t>(config_.image_features().size()) * geometry_.assets.layout.video_horizon.value_or(1);
  std::vector<int64_t> prompt(4, 0);  // "<|im_start|>user\n" and the turn's end stand-ins
  for (int64_t c = 0; c < cameras; ++c) {
    prompt.push_back(backbone.value("vision_start_token_id", 0L));
    prompt.insert(prompt.end(), static_cast<std::size_t>(tokens), geometry_.model.backbone.image_token_id);
    prompt.push_back(backbone.value("vision_end_token_id", 0L));
  }
  prompt.insert(prompt.end(), 16, 0);
  const auto ids = torch::tensor(prompt).repeat({batch_size, 1});
  const auto& head = geometry_.model.head;
  const int64_t horizon = std::min<int64_t>(config_.chunk_size, head.action_horizon);
  return Batch{{"input_ids", ids},
               {"attention_mask", torch::ones_like(ids)},
               {"pixel_values", torch::zeros({batch_size, cameras * side_h * side_w, vision.patch_values()})},
               {"image_grid_thw", torch::tensor({1L, side_h, side_w}).repeat({batch_size, cameras, 1})},
               {"state", torch::zeros({batch_size, 1, config_.max_state_dim})},
               {"action", torch::zeros({batch_size, horizon, config_.max_action_dim})},
               {"action_mask", torch::ones({batch_size, horizon, config_.max_action_dim})},
               {"embodiment_id", torch::zeros({batch_size}, torch::kInt)}};
}

std::vector<ParamGroup> GrootPolicy::param_groups() const {
  // _build_weight_decay_parameter_groups: transformers' get_parameter_names(model, [nn.LayerNorm],
  // patterns) decides decay; every parameter of a LayerNorm module and every name matching the
  // patterns (lower-cased) has none. CategorySpecificLinear's `b` is not named "bias": it decays.
  static const std::regex no_decay_name(R"(bias|layernorm|rmsnorm|(?:^|\.)norm(?:$|\.)|_norm(?:$|\.))");
  std::set<const c10::TensorImpl*> in_layer_norm;
  for (const auto& item : named_modules())
    if (item.value()->as<torch::nn::LayerNorm>())
      for (const auto& p : item.value()->parameters()) in_layer_norm.insert(p.unsafeGetTensorImpl());
  ParamGroup decay{"decay", {}, std::nullopt, std::nullopt};
  ParamGroup no_decay{"no_decay", {}, std::nullopt, 0.0};
  for (const auto& item : named_parameters()) {
    if (!item.value().requires_grad()) continue;
    std::string name = item.key();
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    const bool excluded =
        in_layer_norm.count(item.value().unsafeGetTensorImpl()) || std::regex_search(name, no_decay_name);
    (excluded ? no_decay : decay).params.push_back(item.value());
  }
  std::vector<ParamGroup> groups;
  for (auto* group : {&decay, &no_decay})
    if (!group->params.empty()) groups.push_back(std::move(*group));
  return groups;
}

nlohmann::ordered_json GrootPolicy::optimizer_preset() const {
  return config_.optimizer_preset();
}

nlohmann::ordered_json GrootPolicy::scheduler_preset() const {
  return config_.scheduler_preset();
}

std::map<std::string, std::vector<int64_t>> GrootPolicy::delta_indices() const {
  std::vector<int64_t> steps(static_cast<std::size_t>(config_.action_steps(checkpoint_action_horizon())));
  std::iota(steps.begin(), steps.end(), 0);
  return {{config_.action_feature()->key, steps}};
}

std::optional<LanguageSettings> GrootPolicy::language_settings() const {
  // GR00T's prompt is neither truncated nor padded to a length: max_length only bounds the table.
  // Resolved here, not when built: `lrhost show` builds GR00T's probe models without a tokenizer.
  return LanguageSettings{config_.tokenizer_name,
                          io::resolve_model_dir(config_.tokenizer_name, "policy.tokenizer_name"), 1 << 20, "longest"};
}

std::vector<std::pair<std::string, std::string>> GrootPolicy::pretrained_extra_files() const {
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
  if (!config_.geometry.empty()) settings["geometry"] = config_.geometry;
  if (config_.tokenizer_name != kCosmosReason2) settings["tokenizer_name"] = config_.tokenizer_name;
  if (settings.empty()) return {};
  return {{kGrootSettingsFile, settings.dump(2)}};
}

nlohmann::ordered_json GrootPolicy::rebuild_config() const {
  return config_.to_recipe_json();
}

std::shared_ptr<Policy> make_groot_policy(const nlohmann::json& config, const PolicyFeatures& features) {
  auto parsed = GrootConfig::from_json(config, features);
  auto geometry = resolve_geometry(parsed);
  return std::make_shared<GrootPolicy>(std::move(parsed), std::move(geometry));
}

}  // namespace lrhost::policy::groot
