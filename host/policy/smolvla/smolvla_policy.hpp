// The `smolvla` policy (LeRobot 0.6.1 SmolVLAPolicy): VLAFlowMatching under the name `model`, the batch
// preparation LeRobot does before it (cameras in config order, resized with top-left padding and
// scaled to [-1, 1], missing cameras filled as empty ones up to empty_cameras; state and actions
// zero-padded), the flow-matching loss masked by action_is_pad and normalized over the valid
// (step, action-dim) entries, inference through an action queue of n_action_steps, the freezing of
// vision tower / VLM, LeRobot's dtypes per part, its AdamW and cosine-decay presets, and the language
// tokenization settings its processors use.
//
// Batches carry the preprocessed language as LeRobot's processor writes it:
// observation.language.tokens (B, L) int64 and observation.language.attention_mask (B, L) bool.
// Optional "noise" (B, chunk, max_action_dim) and "time" (B,) entries replace the sampled ones, as the
// noise/time arguments of LeRobot's forward and predict_action_chunk do.
#pragma once
#include <optional>

#include "host/nn/smolvlm_config.hpp"
#include "host/policy/action_queue.hpp"
#include "host/policy/policy.hpp"
#include "host/policy/smolvla/flow_matching_model.hpp"
#include "host/policy/smolvla/smolvla_config.hpp"
#include "host/policy/smolvla/vision_feature_cache.hpp"

namespace lrhost::policy::smolvla {

inline constexpr const char* kLanguageTokens = "observation.language.tokens";
inline constexpr const char* kLanguageMask = "observation.language.attention_mask";

class SmolVLAPolicy : public Policy {
 public:
  // `vlm_dir`: the resolved folder of config.vlm_model_name (config.json and tokenizer files).
  SmolVLAPolicy(SmolVLAConfig config, std::filesystem::path vlm_dir);

  PolicyOutput forward(const Batch& batch) override;
  torch::Tensor select_action(const Batch& batch) override;
  torch::Tensor predict_action_chunk(const Batch& batch) override;
  void reset() override { action_queue_.clear(); }

  std::string type() const override { return "smolvla"; }
  std::optional<std::string> cuda_graph_blocker() const override {
    return "SmolVLA's training step is not capture-safe yet (not audited for host reads: the vision feature cache, "
           "token padding)";
  }
  nlohmann::ordered_json config() const override { return config_.to_json(); }
  nlohmann::ordered_json optimizer_preset() const override;
  // Expert layer j with the VLM layer it runs beside (j · the expert stride, the layer loop's
  // pairing: SmolVLMWithExpertImpl::expert_layer), as the plan must count them gathered together.
  std::string fsdp_gather_group(const std::string& unit_path) const override;
  // smolvla_flops.hpp's count for this model (missing cameras are fed as empty ones: every config
  // camera counts).
  std::optional<double> training_flops_per_sample() const override;
  bool honours_mixture_masks() const override { return true; }
  nlohmann::ordered_json scheduler_preset() const override;
  std::map<std::string, std::string> normalization_mapping() const override;
  PolicyFeatures features() const override { return {config_.input_features, config_.output_features}; }
  std::map<std::string, std::vector<int64_t>> delta_indices() const override;
  std::optional<LanguageSettings> language_settings() const override;
  void load_pretrained_parts() override;
  // With config.cache_vision_features: the vision feature cache under <cache_dir>/vision_features for
  // the context's dataset (enable_vision_cache); without it, nothing.
  void prepare_training(const TrainingContext& context) override;
  // The cache's vision_cache_hit_count / vision_cache_miss_count since it was opened; empty without one.
  std::map<std::string, double> training_metrics() const override;

  // Training with the vision feature cache (config.cache_vision_features): features per (camera,
  // frame) of a dataset of `num_frames` frames under `dir`, shared by the ranks of the run. Refused
  // with image augmentation (`augmentation`: the frames change every epoch) and with a trainable
  // vision tower, and once FSDP has sharded the policy (call it before acc:prepare, as
  // prepare_training is: the fingerprint hashes the whole tower). Batches must then carry the frame
  // `index`. `dataset_id` names the dataset in the cache's fingerprint.
  void enable_vision_cache(const std::filesystem::path& dir, int64_t num_frames, const std::string& dataset_id,
                           bool augmentation);
  const std::shared_ptr<VisionFeatureCache>& vision_cache() const { return vision_cache_; }

  const SmolVLAConfig& smolvla_config() const { return config_; }
  const std::filesystem::path& vlm_dir() const { return vlm_dir_; }
  VLAFlowMatching& model() { return model_; }

 private:
  PrefixInputs prepare_inputs(const Batch& batch);
  torch::Tensor prepare_image(const torch::Tensor& image) const;
  torch::Tensor pad_last_dim(const torch::Tensor& x, int64_t size) const;

  SmolVLAConfig config_;
  std::filesystem::path vlm_dir_;
  nn::SmolVLMConfig vlm_config_;
  VLAFlowMatching model_{nullptr};
  ActionQueue action_queue_;
  std::shared_ptr<VisionFeatureCache> vision_cache_;
};

std::shared_ptr<Policy> make_smolvla_policy(const nlohmann::json& config, const PolicyFeatures& features);

}  // namespace lrhost::policy::smolvla
