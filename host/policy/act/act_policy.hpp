// The `act` policy (LeRobot's ACTPolicy): the ACT network under the name `model`, its training loss
// (L1 over the non-padded actions plus kl_weight times the VAE's KL divergence), inference through
// an action queue of n_action_steps (or temporal ensembling when temporal_ensemble_coeff is set),
// LeRobot's optimizer groups (backbone separate, lr = optimizer_lr_backbone), presets and
// delta indices.
#pragma once
#include <deque>
#include <optional>

#include "host/policy/act/act_config.hpp"
#include "host/policy/act/act_model.hpp"
#include "host/policy/act/act_temporal_ensembler.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::policy::act {

class ACTPolicy : public Policy {
 public:
  explicit ACTPolicy(ACTConfig config);

  // Loss in the current mode (train: VAE latent sampled; eval: zero latent, no kld_loss part).
  PolicyOutput forward(const Batch& batch) override;
  // Switches to eval mode, as LeRobot does, and pops the next action (B, A).
  torch::Tensor select_action(const Batch& batch) override;
  // Switches to eval mode; the whole predicted chunk (B, chunk_size, A), as LeRobot returns it.
  torch::Tensor predict_action_chunk(const Batch& batch) override;
  void reset() override;

  std::string type() const override { return "act"; }
  nlohmann::ordered_json config() const override { return config_.to_json(); }
  std::vector<ParamGroup> param_groups() const override;
  nlohmann::ordered_json optimizer_preset() const override;
  // act_flops.hpp's count for this config.
  std::optional<double> training_flops_per_sample() const override;
  nlohmann::ordered_json scheduler_preset() const override { return nullptr; }
  std::map<std::string, std::string> normalization_mapping() const override;
  PolicyFeatures features() const override { return {config_.input_features, config_.output_features}; }
  std::map<std::string, std::vector<int64_t>> delta_indices() const override;

  const ACTConfig& act_config() const { return config_; }
  ACT& model() { return model_; }

 private:
  std::vector<torch::Tensor> camera_images(const Batch& batch) const;

  ACTConfig config_;
  ACT model_{nullptr};
  std::optional<ACTTemporalEnsembler> temporal_ensembler_;
  std::deque<torch::Tensor> action_queue_;
};

std::shared_ptr<Policy> make_act_policy(const nlohmann::json& config, const PolicyFeatures& features);

}  // namespace lrhost::policy::act
