// The normalization pipelines a policy carries, as LeRobot's processor_<policy>.py builds them: the
// preprocessor (e.g. rename -> to_batch -> device -> normalizer) normalizes observations and the
// action with dataset statistics, the postprocessor (unnormalizer -> device cpu) maps predicted
// actions back. Which steps, in which order, is the policy's (its spec's ProcessorPipeline,
// processor_pipeline.hpp); policies fed with language add new-line and tokenizer steps
// (task_tokenizer.hpp), pi05 a state-prompt step after its normalizer (state_prompt.hpp); the
// preprocessor runs its steps in pipeline order. The rename step renames batch keys (rename_map:
// dataset name -> policy name); to_batch and device change nothing here (batches are already
// batched; the training loader copies them to the device between the steps before the device step
// and those after it: preprocess_before_device / _after_device, policy::loader_preprocessing), but
// every step is kept so that policy_preprocessor.json / policy_postprocessor.json and their
// *_step_<i>_<registry_name>.safetensors state files are written exactly as LeRobot writes them and
// LeRobot's from_pretrained reads them. The formulas are data::normalize / unnormalize. The runtime
// is processors.cpp, the files processor_files.cpp.
#pragma once
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/data/stats/feature_stats.hpp"
#include "host/data/stats/normalizer.hpp"
#include "host/policy/policy.hpp"
#include "host/policy/policy_features.hpp"
#include "host/policy/processor_pipeline.hpp"
#include "host/policy/task_tokenizer.hpp"

namespace lrhost::policy {
namespace groot {
class GrootProcessorSteps;
}

// The feature types a normalization map may name (LeRobot's FeatureType values that normalize).
inline const std::vector<std::string> kNormFeatureTypes{"VISUAL", "STATE", "ENV", "ACTION"};

// One normalizer / unnormalizer step: the features it covers, the mode of each feature type, eps,
// and every stat it was given (float32, LeRobot's to_tensor), also of features it does not touch.
struct NormalizerStep {
  std::vector<PolicyFeature> features;
  // "VISUAL" -> "MEAN_STD", ... in the policy config's order (it is the JSON's key order).
  std::vector<std::pair<std::string, std::string>> norm_map;
  double eps = data::kNormEps;
  data::DatasetStats stats;
  // A mixture normalized per dataset (dataset.stats = "per_dataset"): each dataset's stats by name,
  // converted as `stats` is, in the order of the batches' `dataset_index`; `stats` is then the first
  // dataset's (what the default files hold). Empty otherwise.
  std::vector<std::pair<std::string, data::DatasetStats>> per_dataset;

  // Flat "<feature>.<stat>" tensors in name order, as the step's state file holds them.
  std::vector<std::pair<std::string, torch::Tensor>> state() const;
  // The stats that normalize `key` in `x` ([B, ...]): `stats`'s entry, or with per-dataset stats
  // each sample's dataset's (every stat [B, 1.., stat shape], picked by `dataset_index` [B], which is
  // then required: DataError naming it). Nullopt when no stats cover `key`.
  std::optional<data::FeatureStats> stats_for(const std::string& key, const torch::Tensor& x,
                                              const torch::Tensor* dataset_index) const;
  // The mode of a feature type; IDENTITY when the map has none (LeRobot's norm_map.get default).
  data::NormMode mode_of(const std::string& type) const;
  // `stats` of `features` as LeRobot keeps them (to_tensor(stats, dtype=float32)): every stat float32,
  // flat per-channel stats of VISUAL features reshaped to (C, 1, 1).
  static data::DatasetStats lerobot_stats(const data::DatasetStats& stats, const std::vector<PolicyFeature>& features);
};

class PolicyProcessors {
 public:
  // The pipelines `pipeline` for a policy with these features and normalization mapping, fed with
  // dataset stats (apply data::apply_imagenet_stats first for use_imagenet_stats). `device` is the
  // preprocessor's device step ("cpu" / "cuda", the policy config's device). `language` is required
  // exactly when the pipeline has a tokenizer step (ConfigError otherwise).
  static PolicyProcessors build(const PolicyFeatures& features,
                                const std::vector<std::pair<std::string, std::string>>& norm_map,
                                const data::DatasetStats& stats, const std::string& device = "cpu",
                                const std::optional<LanguageSettings>& language = std::nullopt,
                                const ProcessorPipeline& pipeline = ProcessorPipeline::lerobot_default());
  // The same for a policy: its spec's pipeline, its features (or `fallback` when it declares none,
  // e.g. mlp), its normalization mapping in config.json order, and its config's "device" (cpu when
  // absent).
  // `norm_map_override` (lr.policy.new's option) replaces the policy's mode of each feature type it
  // names; the types it does not name keep the policy's.
  static PolicyProcessors for_policy(const Policy& policy, const PolicyFeatures& fallback,
                                     const data::DatasetStats& stats,
                                     const std::vector<std::pair<std::string, std::string>>& norm_map_override = {});

  // Preprocessor: renames keys per rename_map, adds the language tokens (language pipelines: from
  // `task_index` through the task table, unless the batch already has tokens), normalizes every
  // non-ACTION input feature present in the batch and "action"; other entries pass through unchanged.
  // Returns a new batch.
  Batch normalize(const Batch& batch) const;
  // The same with the task strings of the batch's rows given (language pipelines only).
  Batch normalize(const Batch& batch, const std::vector<std::string>& tasks) const;
  // The preprocessor cut at its device step, for a loader that copies batches to the device in
  // between (BatchLoader's preprocess stages, policy::loader_preprocessing): the steps before the
  // device step run where the loader assembled the batch (host memory, cameras still uint8), as
  // LeRobot's processor order has them (pi05 normalizes and builds its state prompt there), the
  // steps after it on the device. normalize(batch) runs them all on one batch. No text crosses the
  // cut: the steps are in the spec's order (read_step checks a file's), where every language step
  // precedes the device step.
  Batch preprocess_before_device(const Batch& batch) const;
  Batch preprocess_after_device(const Batch& batch) const;
  // Tokenizes a dataset's tasks once (by task_index) for normalize(batch). The table is a cache of the
  // tokenizer's output, not saved state, hence const. ConfigError when the pipeline has no language.
  void set_task_table(const std::vector<std::string>& tasks) const;
  bool has_language() const { return language_ != nullptr || groot_ != nullptr; }
  // The tokenizer settings of the language steps (null without them).
  const LanguageSettings* language_settings() const { return language_ ? &language_->settings() : nullptr; }
  // Dataset key -> policy key renames applied first (LeRobot's rename_observations_processor).
  void set_rename_map(const std::map<std::string, std::string>& renames);
  const std::map<std::string, std::string>& rename_map() const { return rename_map_; }
  // Fails (util::DataError naming the feature, the missing stats and `dataset` — where the stats
  // came from — with the command that adds them) when a feature's mode needs stats its entry lacks,
  // e.g. q01/q99 for QUANTILES; features without any stats pass through, as in LeRobot. Called
  // when a policy meets its dataset, so that the error comes before the first batch.
  void require_stats(const std::string& dataset) const;
  // Postprocessor: unnormalizes an action tensor (the "action" feature). With per-dataset stats,
  // `dataset_index` ([B], a batch's) picks each sample's dataset; without it the first dataset's stats
  // apply (the default files').
  torch::Tensor unnormalize(const torch::Tensor& action, const torch::Tensor& dataset_index = {}) const;

  // Per-dataset normalization (a mixture with dataset.stats = "per_dataset"): each dataset's stats
  // (dataset_index order, as DatasetMeta::per_dataset_stats has them); the default stats become the
  // first's. Feature and stat conversion as build() does it.
  void set_per_dataset_stats(const std::vector<std::pair<std::string, data::DatasetStats>>& stats);
  std::vector<std::string> per_dataset_names() const;
  // These processors with one dataset's stats only: what policy_preprocessor_<name>.json holds, for
  // evaluating or deploying on that dataset's robot. ConfigError listing the names otherwise.
  PolicyProcessors for_dataset(const std::string& name) const;

  // Writes policy_preprocessor.json, policy_postprocessor.json and the state files into `dir`; with
  // per-dataset stats also each dataset's pipeline files as LeRobot would save a pipeline named
  // policy_preprocessor_<name> (policy_preprocessor_<name>.json, policy_preprocessor_<name>_step_<i>_
  // normalizer_processor.safetensors, the same for the postprocessor) and per_dataset_stats.json
  // listing the names in order. LeRobot reads one with PolicyProcessorPipeline.from_pretrained(dir,
  // config_filename="policy_preprocessor_<name>.json"); its defaults read the first dataset's.
  void save(const std::filesystem::path& dir) const;
  // Reads them back; errors name the file and what is wrong. Files are checked against the pipeline of
  // a registered policy type (step names and order, config keys, state file names,
  // "<feature>.<stat>" keys). With per_dataset_stats.json each dataset's stats come back too (its
  // files read and checked the same way); for_dataset(name) then gives one dataset's processors.
  static PolicyProcessors load(const std::filesystem::path& dir);
  // Whether `dir` holds processor files (either JSON).
  static bool present(const std::filesystem::path& dir);

  const NormalizerStep& normalizer() const { return normalizer_; }
  const NormalizerStep& unnormalizer() const { return unnormalizer_; }
  const std::string& device() const { return device_; }
  const ProcessorPipeline& pipeline() const { return pipeline_; }
  // The state files of the (un)normalizer steps: "policy_preprocessor_step_<i>_normalizer_processor.safetensors"
  // with <i> the step's index in this pipeline.
  std::string normalizer_state_file() const;
  std::string unnormalizer_state_file() const;
  // The JSON documents as they are saved.
  nlohmann::ordered_json preprocessor_json() const;
  nlohmann::ordered_json postprocessor_json() const;

  bool operator==(const PolicyProcessors& other) const;

 private:
  Batch renamed(const Batch& batch) const;
  Batch normalized(Batch batch) const;
  // Runs the preprocessor's steps in pipeline order; `tasks` are the rows' task strings, or null when
  // the batch carries task_index (or tokens) instead.
  Batch preprocess(const Batch& batch, const std::vector<std::string>* tasks) const;
  // The steps [first, last) only.
  Batch preprocess(const Batch& batch, const std::vector<std::string>* tasks, std::size_t first,
                   std::size_t last) const;
  // A step's entry of a pipeline file as read (processor_files.cpp): the entry, its config, its place.
  struct StepFileEntry {
    const nlohmann::ordered_json& entry;
    const nlohmann::ordered_json& config;
    std::size_t index;
    const std::filesystem::path& dir;
    const std::filesystem::path& file;
    const std::string& where;  // "<file>: step <i> (<registry name>)", for errors
    bool postprocessor;
  };
  // How one step kind is written to LeRobot's pipeline JSON and read back into this object: one row
  // per kind (codec), both sides in one place.
  struct StepCodec {
    nlohmann::ordered_json (*write)(const PolicyProcessors&, const ProcessorStep&, const std::string& device);
    void (*read)(PolicyProcessors&, const StepFileEntry&);
  };
  static StepCodec codec(ProcessorStepKind kind);
  // One step's entry in the pipeline JSON, and reading it back into this object (through its codec).
  nlohmann::ordered_json step_json(const ProcessorStep& step, const std::string& device) const;
  void read_step(const ProcessorStep& step, const nlohmann::ordered_json& entry, std::size_t index,
                 const std::filesystem::path& dir, const std::filesystem::path& file, bool postprocessor);
  // One pair of pipeline files (named pre_name_ / post_name_) and their state files.
  void save_pipeline_files(const std::filesystem::path& dir) const;
  static PolicyProcessors load_pipeline_files(const std::filesystem::path& dir, const std::string& suffix);

  // The pipelines' names, which name their files: LeRobot's, or for one dataset's files of a
  // per-dataset checkpoint (save, load) "policy_preprocessor_<name>" / "policy_postprocessor_<name>".
  std::string pre_name_ = "policy_preprocessor", post_name_ = "policy_postprocessor";
  ProcessorPipeline pipeline_ = ProcessorPipeline::lerobot_default();
  NormalizerStep normalizer_, unnormalizer_;
  std::string device_ = "cpu";
  std::map<std::string, std::string> rename_map_;
  std::shared_ptr<TaskTokenizer> language_;
  // GR00T's pack / VLM-encode / unpack steps (a groot pipeline only); their stats are normalizer_'s
  // and unnormalizer_'s.
  std::shared_ptr<groot::GrootProcessorSteps> groot_;
  // relative_actions_processor's config as written and read (enabled is always false here).
  nlohmann::ordered_json relative_config_ = {
      {"enabled", false}, {"exclude_joints", {"gripper"}}, {"action_names", nullptr}};
};

inline constexpr const char* kPreprocessorFile = "policy_preprocessor.json";
inline constexpr const char* kPostprocessorFile = "policy_postprocessor.json";
// The datasets of a checkpoint normalized per dataset, in order: {"datasets": ["<name>", ...]}.
inline constexpr const char* kPerDatasetStatsFile = "per_dataset_stats.json";

}  // namespace lrhost::policy
