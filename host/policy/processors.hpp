// The normalization pipelines a policy carries, as LeRobot's make_default_pre_post_processors builds
// them: the preprocessor (rename -> to_batch -> device -> normalizer) normalizes observations and
// the action with dataset statistics, the postprocessor (unnormalizer -> device cpu) maps predicted
// actions back. Policies fed with language (SmolVLA, make_smolvla_pre_post_processors) have two more
// steps after to_batch: smolvla_new_line and tokenizer (task_tokenizer.hpp), and their normalizer is
// step 5. The rename step renames batch keys (rename_map: dataset name -> policy name); to_batch and
// device change nothing here (batches are already batched and on the device), but every step is
// kept so that policy_preprocessor.json / policy_postprocessor.json and their
// *_step_<i>_<registry_name>.safetensors state files are written exactly as LeRobot writes them and
// LeRobot's from_pretrained reads them. The formulas are data::normalize / unnormalize.
#pragma once
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "host/data/stats/feature_stats.hpp"
#include "host/data/stats/normalizer.hpp"
#include "host/policy/policy.hpp"
#include "host/policy/policy_features.hpp"
#include "host/policy/task_tokenizer.hpp"

namespace lrhost::policy {

// One normalizer / unnormalizer step: the features it covers, the mode of each feature type, eps,
// and every stat it was given (float32, LeRobot's to_tensor), also of features it does not touch.
struct NormalizerStep {
  std::vector<PolicyFeature> features;
  // "VISUAL" -> "MEAN_STD", ... in the policy config's order (it is the JSON's key order).
  std::vector<std::pair<std::string, std::string>> norm_map;
  double eps = data::kNormEps;
  data::DatasetStats stats;

  // Flat "<feature>.<stat>" tensors in name order, as the step's state file holds them.
  std::vector<std::pair<std::string, torch::Tensor>> state() const;
  // The mode of a feature type; IDENTITY when the map has none (LeRobot's norm_map.get default).
  data::NormMode mode_of(const std::string& type) const;
};

class PolicyProcessors {
 public:
  // LeRobot's default pipelines for a policy with these features and normalization mapping, fed
  // with dataset stats (apply data::apply_imagenet_stats first for use_imagenet_stats). `device`
  // is the preprocessor's device step ("cpu" / "cuda", the policy config's device).
  static PolicyProcessors build(const PolicyFeatures& features,
                                const std::vector<std::pair<std::string, std::string>>& norm_map,
                                const data::DatasetStats& stats, const std::string& device = "cpu",
                                const std::optional<LanguageSettings>& language = std::nullopt);
  // The same for a policy: its features (or `fallback` when it declares none, e.g. mlp), its
  // normalization mapping in config.json order, and its config's "device" (cpu when absent).
  static PolicyProcessors for_policy(const Policy& policy, const PolicyFeatures& fallback,
                                     const data::DatasetStats& stats);

  // Preprocessor: renames keys per rename_map, adds the language tokens (language pipelines: from
  // `task_index` through the task table, unless the batch already has tokens), normalizes every
  // non-ACTION input feature present in the batch and "action"; other entries pass through unchanged.
  // Returns a new batch.
  Batch normalize(const Batch& batch) const;
  // The same with the task strings of the batch's rows given (language pipelines only).
  Batch normalize(const Batch& batch, const std::vector<std::string>& tasks) const;
  // Tokenizes a dataset's tasks once (by task_index) for normalize(batch). The table is a cache of the
  // tokenizer's output, not saved state, hence const. ConfigError when the pipeline has no language.
  void set_task_table(const std::vector<std::string>& tasks) const;
  bool has_language() const { return language_ != nullptr; }
  // Dataset key -> policy key renames applied first (LeRobot's rename_observations_processor).
  void set_rename_map(const std::map<std::string, std::string>& renames);
  const std::map<std::string, std::string>& rename_map() const { return rename_map_; }
  // Postprocessor: unnormalizes an action tensor (the "action" feature).
  torch::Tensor unnormalize(const torch::Tensor& action) const;

  // Writes policy_preprocessor.json, policy_postprocessor.json and the state files into `dir`.
  void save(const std::filesystem::path& dir) const;
  // Reads them back; errors name the file and what is wrong. Files are checked against LeRobot's
  // structure (step names and order, config keys, state file names, "<feature>.<stat>" keys).
  static PolicyProcessors load(const std::filesystem::path& dir);
  // Whether `dir` holds processor files (either JSON).
  static bool present(const std::filesystem::path& dir);

  const NormalizerStep& normalizer() const { return normalizer_; }
  const NormalizerStep& unnormalizer() const { return unnormalizer_; }
  const std::string& device() const { return device_; }
  // The JSON documents as they are saved.
  nlohmann::ordered_json preprocessor_json() const;
  nlohmann::ordered_json postprocessor_json() const;

  bool operator==(const PolicyProcessors& other) const;

 private:
  Batch renamed(const Batch& batch) const;
  Batch normalized(Batch batch) const;

  NormalizerStep normalizer_, unnormalizer_;
  std::string device_ = "cpu";
  std::map<std::string, std::string> rename_map_;
  std::shared_ptr<TaskTokenizer> language_;
};

inline constexpr const char* kPreprocessorFile = "policy_preprocessor.json";
inline constexpr const char* kPostprocessorFile = "policy_postprocessor.json";
inline constexpr const char* kNormalizerStateFile = "policy_preprocessor_step_3_normalizer_processor.safetensors";
inline constexpr const char* kLanguageNormalizerStateFile = "policy_preprocessor_step_5_normalizer_processor.safetensors";
inline constexpr const char* kUnnormalizerStateFile = "policy_postprocessor_step_0_unnormalizer_processor.safetensors";

}  // namespace lrhost::policy
