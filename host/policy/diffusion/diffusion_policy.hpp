// The `diffusion` policy (LeRobot's DiffusionPolicy): the DiffusionModel under the name `diffusion`,
// the training loss on observation windows (camera keys stacked into "observation.images"),
// inference with LeRobot's queues (the last n_obs_steps observations, copied to fill the window at
// the start of an episode, and an action queue of n_action_steps refilled by a new chunk when
// empty), and LeRobot's presets: Adam with the cosine-with-warmup schedule, MIN_MAX state/action
// normalization, one optimizer group, delta indices for the observation and action windows.
// Like LeRobot, inference does not switch the mode: call eval() first (random crops and BatchNorm
// batch statistics are training behaviour).
#pragma once
#include <deque>
#include <map>
#include <string>

#include "host/policy/diffusion/diffusion_config.hpp"
#include "host/policy/diffusion/diffusion_model.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::policy::diffusion {

class DiffusionPolicy : public Policy {
 public:
  explicit DiffusionPolicy(DiffusionConfig config);

  // The loss; LeRobot returns no output dict, so parts is empty. Observations are windows
  // (B, n_obs_steps, ...); with n_obs_steps = 1 single frames (B, C, H, W) / (B, D) are accepted too.
  PolicyOutput forward(const Batch& batch) override;
  // The loss with the noise (B, horizon, A) and timesteps (B,) given instead of drawn.
  torch::Tensor compute_loss(const Batch& batch, const torch::Tensor& noise, const torch::Tensor& timesteps);

  // The next action (B, A) for one observation frame (cameras (B, C, H, W), state (B, D)), through
  // the observation and action queues; `noise` (B, horizon, A) replaces the prior when a chunk is
  // generated.
  torch::Tensor select_action(const Batch& batch) override { return select_action(batch, {}); }
  torch::Tensor select_action(const Batch& batch, const torch::Tensor& noise);
  // (B, n_action_steps, A): from the queued observations once select_action has filled them, else
  // from the batch's own windows (B, n_obs_steps, ...) as a data loader delivers them.
  torch::Tensor predict_action_chunk(const Batch& batch) override { return predict_action_chunk(batch, {}); }
  torch::Tensor predict_action_chunk(const Batch& batch, const torch::Tensor& noise);
  void reset() override;

  std::string type() const override { return "diffusion"; }
  std::optional<std::string> cuda_graph_blocker() const override;
  nlohmann::ordered_json config() const override { return config_.to_json(); }
  nlohmann::ordered_json optimizer_preset() const override;
  // diffusion_flops.hpp's count for this model.
  std::optional<double> training_flops_per_sample() const override;
  nlohmann::ordered_json scheduler_preset() const override;
  std::map<std::string, std::string> normalization_mapping() const override;
  PolicyFeatures features() const override { return {config_.input_features, config_.output_features}; }
  std::map<std::string, std::vector<int64_t>> delta_indices() const override;

  const DiffusionConfig& diffusion_config() const { return config_; }
  DiffusionModel& model() { return diffusion_; }
  // Queue lengths, for tests and diagnostics.
  size_t observation_queue_size(const std::string& key) const;
  size_t action_queue_size() const { return action_queue_.size(); }

 private:
  // The batch with single frames given a window axis (n_obs_steps = 1 only) and the cameras
  // stacked into "observation.images" (B, S, N, C, H, W).
  Batch with_windows(const Batch& batch) const;

  DiffusionConfig config_;
  DiffusionModel diffusion_{nullptr};
  std::map<std::string, std::deque<torch::Tensor>> observation_queues_;
  std::deque<torch::Tensor> action_queue_;
};

std::shared_ptr<Policy> make_diffusion_policy(const nlohmann::json& config, const PolicyFeatures& features);

}  // namespace lrhost::policy::diffusion
