// The `groot` policy (LeRobot 0.6.1 GrootPolicy over GR00TN17): the network (groot_model.hpp) under
// LeRobot's name `_groot_model`, built from the geometry groot_geometry.hpp resolves; the tuning
// switches with LeRobot's freezing (requires_grad) and its eval-mode rule (frozen parts stay in eval
// in training: no dropout draws there); bf16 autocast over fp32 parameters around the forward and
// sampling when use_bf16 (on the policy's device, as LeRobot's torch.autocast(device.type)); the
// weight-decay groups of _build_weight_decay_parameter_groups; the AdamW + diffusers-cosine presets
// (warmup from the deprecated max_steps, as LeRobot); the action queue.
//
// Batches are the GR00T preprocessor's output (groot_processor_steps.hpp), with a leading batch
// dimension on every entry: input_ids / attention_mask (B, L), pixel_values (B, V·patches, C·Tp·P·P),
// image_grid_thw (B, V, 3), state (B, 1, max_state_dim), embodiment_id (B); for training action and
// action_mask (B, H, max_action_dim). Optional "noise" (B, H, max_action_dim) and "time" (B) entries
// replace the training forward's draws (then no state dropout is drawn either), and "noise" the
// sampled x_0 of predict_action_chunk, as in the other flow-matching policies.
#pragma once
#include <filesystem>
#include <optional>

#include "host/policy/action_queue.hpp"
#include "host/policy/groot/groot_config.hpp"
#include "host/policy/groot/groot_geometry.hpp"
#include "host/policy/groot/groot_model.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::policy::groot {

class GrootPolicy : public Policy {
 public:
  GrootPolicy(GrootConfig config, GrootGeometry geometry);

  PolicyOutput forward(const Batch& batch) override;
  torch::Tensor select_action(const Batch& batch) override;
  torch::Tensor predict_action_chunk(const Batch& batch) override;
  void reset() override { action_queue_.clear(); }
  // Module::train, then the frozen parts back to eval (LeRobot's set_frozen_modules_to_eval_mode).
  void train(bool on = true) override;

  std::string type() const override { return "groot"; }
  nlohmann::ordered_json config() const override { return config_.to_json(); }
  nlohmann::ordered_json rebuild_config() const override;
  std::vector<ParamGroup> param_groups() const override;
  nlohmann::ordered_json optimizer_preset() const override;
  nlohmann::ordered_json scheduler_preset() const override;
  PolicyFeatures features() const override { return {config_.input_features, config_.output_features}; }
  std::map<std::string, std::vector<int64_t>> delta_indices() const override;
  std::optional<LanguageSettings> language_settings() const override;
  // The processed batch its preprocessor makes for a task of 16 tokens: every camera's merged image tokens in
  // the prompt, pixels of the processor's image size, a full action chunk.
  std::optional<Batch> example_batch(int64_t batch_size) const override;
  std::optional<std::string> own_autocast() const override {
    if (!config_.use_bf16) return std::nullopt;
    return "runs its forward and sampling under bf16 autocast (policy.use_bf16 = true, LeRobot's GR00T default, on "
           "the CPU too)";
  }
  std::optional<std::string> cuda_graph_blocker() const override {
    return "GR00T draws its flow-matching time from the CPU generator (torch.distributions.Beta, as LeRobot), "
           "which a CUDA graph cannot replay";
  }
  std::vector<std::pair<std::string, std::string>> pretrained_extra_files() const override;
  // LeRobot's model.safetensors keeps the tied embedding under lm_head's name; a base checkpoint's
  // (lr.policy.new, through the spec's base_weights) names the network without `_groot_model.`.
  std::vector<std::string> adapt_pretrained_tensors(
      std::vector<std::pair<std::string, torch::Tensor>>& tensors) const override;
  void adapt_saved_tensors(std::vector<std::pair<std::string, torch::Tensor>>& tensors) const override;

  const GrootConfig& groot_config() const { return config_; }
  const GrootGeometry& geometry() const { return geometry_; }
  GrootModel& model() { return model_; }
  // How many steps of a predicted chunk are used (LeRobot's _resolve_prediction_horizon).
  int64_t prediction_horizon() const;
  // The model's action horizon, or the base checkpoint's valid horizon for the embodiment when shorter.
  int64_t checkpoint_action_horizon() const;

 private:
  GrootBatch groot_batch(const Batch& batch) const;
  // requires_grad as Qwen3Backbone / GR00TN17ActionHead.set_trainable_parameters set it.
  void set_trainable_parameters();

  GrootConfig config_;
  GrootGeometry geometry_;
  GrootModel model_{nullptr};
  ActionQueue action_queue_;
};

std::shared_ptr<Policy> make_groot_policy(const nlohmann::json& config, const PolicyFeatures& features);

}  // namespace lrhost::policy::groot
