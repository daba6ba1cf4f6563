// What the `pi0` and `pi05` policies share (LeRobot 0.6.1 PI0Policy / PI05Policy): PiFlowMatching under
// the name `model`, the batch preparation LeRobot does before it (cameras in config order, present ones
// first and then one empty image per missing camera; resized with centred padding and clamped when not
// at image_resolution, scaled to [-1, 1]; state and actions zero-padded), the flow-matching loss as a
// plain mean over (batch, chunk, action dims) — LeRobot 0.6.1 ignores action_is_pad for pi0/pi05, and
// so does lrhost — inference through an action queue of n_action_steps, LeRobot's AdamW and
// cosine-decay presets, and the language settings of its tokenizer step. The subclasses in
// host/policy/pi0 and host/policy/pi05 add only their type and config.json.
//
// Batches carry the preprocessed language (observation.language.tokens / attention_mask: pi05's prompt
// holds the discretized state). Optional "noise" (B, chunk, max_action_dim) and "time" (B,) entries
// replace the sampled ones, as LeRobot's oracle does by shadowing sample_noise / sample_time.
#pragma once
#include <optional>
#include <set>
#include <string>

#include "host/policy/action_queue.hpp"
#include "host/policy/pi/pi_config_fields.hpp"
#include "host/policy/pi/pi_flow_matching.hpp"
#include "host/policy/pi/pi_geometry.hpp"
#include "host/policy/policy.hpp"

namespace lrhost::policy::pi {

// The geometry a config asks for: LeRobot's for its variants, or its `geometry` file's.
PiGeometry pi_geometry_of(const PiConfigFields& config, PiVariant variant);
// LeRobot's presets: AdamW and cosine decay with warmup from the config's optimizer_* / scheduler_*.
nlohmann::ordered_json pi_optimizer_preset(const PiConfigFields& config);
nlohmann::ordered_json pi_scheduler_preset(const PiConfigFields& config);

class PiPolicy : public Policy {
 public:
  // The geometry comes from the config (its variants, or its `geometry` file) unless given.
  PiPolicy(PiVariant variant, PiConfigFields config, std::optional<PiGeometry> geometry = std::nullopt);

  PolicyOutput forward(const Batch& batch) override;
  torch::Tensor select_action(const Batch& batch) override;
  torch::Tensor predict_action_chunk(const Batch& batch) override;
  void reset() override { action_queue_.clear(); }

  std::optional<std::string> cuda_graph_blocker() const override {
    return "pi0/pi05's training step is not audited for CUDA-graph capture yet";
  }
  nlohmann::ordered_json optimizer_preset() const override;
  nlohmann::ordered_json scheduler_preset() const override;
  std::map<std::string, std::string> normalization_mapping() const override;
  PolicyFeatures features() const override { return {config_.input_features, config_.output_features}; }
  std::map<std::string, std::vector<int64_t>> delta_indices() const override;
  // The tokenizer resolved when asked (planning needs none): tokenizer_name, a folder or cached hub id.
  std::optional<LanguageSettings> language_settings() const override;
  // openpi's layout (LeRobot's _fix_pytorch_state_dict_keys, done explicitly and said): keys without
  // the "model." prefix, pi0's time_mlp_* / pi05's action_time_mlp_* names, pi05's unused state_proj,
  // embed_tokens absent because openpi ties it to paligemma.lm_head (taken from there), and the dead
  // expert lm_head absent (zeros: never computed). LeRobot's own files need none of it.
  std::vector<std::string> adapt_pretrained_tensors(
      std::vector<std::pair<std::string, torch::Tensor>>& tensors) const override;
  // geometry.json when the geometry is not LeRobot's (pi_geometry.hpp).
  std::vector<std::pair<std::string, std::string>> pretrained_extra_files() const override;

  // pi_flops.hpp: every camera of the config through SigLIP, language padded to tokenizer_max_length.
  std::optional<double> training_flops_per_sample() const override;
  bool honours_mixture_masks() const override { return true; }
  // config.json's fields and the geometry file the policy was built from (unless LeRobot's).
  nlohmann::ordered_json rebuild_config() const override;

  const PiConfigFields& pi_config() const { return config_; }
  const PiGeometry& geometry() const { return geometry_; }
  PiFlowMatching& model() { return model_; }

 private:
  PiInputs prepare_inputs(const Batch& batch) const;
  torch::Tensor prepare_image(const std::string& key, const torch::Tensor& image) const;

  PiVariant variant_;
  PiConfigFields config_;
  PiGeometry geometry_;
  PiFlowMatching model_{nullptr};
  ActionQueue action_queue_;
  mutable std::set<std::string> warned_missing_cameras_;  // said once each
};

}  // namespace lrhost::policy::pi
