// The processor pipelines at run time: building them for a policy and a dataset's stats, and running
// the preprocessor's steps (rename, the language steps, normalization) on batches and the
// postprocessor's unnormalization on actions. The LeRobot files they are saved as and read from are
// processor_files.cpp's; see processors.hpp.
#include "host/policy/processors.hpp"

#include <algorithm>

#include "host/data/mixture/padded_dimensions.hpp"
#include "host/policy/groot/groot_processor_steps.hpp"
#include "host/policy/registry.hpp"
#include "host/policy/rename_map.hpp"
#include "host/policy/state_prompt.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy {
using nlohmann::ordered_json;

namespace {

// The new-line step (<policy>_new_line_processor): "\n" appended unless the task ends with one.
std::string append_new_line(const std::string& task) {
  return !task.empty() && task.back() == '\n' ? task : task + "\n";
}

bool stats_equal(const data::DatasetStats& a, const data::DatasetStats& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [key, sa] : a) {
    auto found = b.find(key);
    if (found == b.end() || sa.names() != found->second.names()) return false;
    for (const auto& name : sa.names())
      if (!torch::equal(sa.get(name), found->second.get(name))) return false;
  }
  return true;
}

bool steps_equal(const NormalizerStep& a, const NormalizerStep& b) {
  if (a.per_dataset.size() != b.per_dataset.size()) return false;
  for (std::size_t k = 0; k < a.per_dataset.size(); ++k)
    if (a.per_dataset[k].first != b.per_dataset[k].first ||
        !stats_equal(a.per_dataset[k].second, b.per_dataset[k].second))
      return false;
  return a.features == b.features && a.norm_map == b.norm_map && a.eps == b.eps && stats_equal(a.stats, b.stats);
}

const torch::Tensor* dataset_index_of(const Batch& batch) {
  auto found = batch.find(data::kDatasetIndexKey);
  return found == batch.end() ? nullptr : &found->second;
}

}  // namespace

data::DatasetStats NormalizerStep::lerobot_stats(const data::DatasetStats& stats,
                                                 const std::vector<PolicyFeature>& features) {
  data::DatasetStats out;
  for (const auto& [key, feature_stats] : stats) {
    bool visual = std::any_of(features.begin(), features.end(),
                              [&](const PolicyFeature& f) { return f.key == key && f.type == "VISUAL"; });
    data::FeatureStats converted;
    for (const auto& name : feature_stats.names()) {
      torch::Tensor t = feature_stats.get(name).detach().to(torch::kCPU, torch::kFloat32).contiguous().clone();
      if (visual && t.dim() == 1) t = t.reshape({-1, 1, 1});
      converted.set(name, t);
    }
    out[key] = converted;
  }
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> NormalizerStep::state() const {
  std::vector<std::pair<std::string, torch::Tensor>> flat;
  for (const auto& [key, feature_stats] : stats)
    for (const auto& name : feature_stats.names()) flat.emplace_back(key + "." + name, feature_stats.get(name));
  std::sort(flat.begin(), flat.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return flat;
}

data::NormMode NormalizerStep::mode_of(const std::string& type) const {
  for (const auto& [t, mode] : norm_map)
    if (t == type) return data::parse_norm_mode(mode);
  return data::NormMode::Identity;
}

PolicyProcessors PolicyProcessors::build(const PolicyFeatures& features,
                                         const std::vector<std::pair<std::string, std::string>>& norm_map,
                                         const data::DatasetStats& stats, const std::string& device,
                                         const std::optional<LanguageSettings>& language,
                                         const ProcessorPipeline& pipeline) {
  using Kind = ProcessorStepKind;
  if (!ProcessorPipeline::index_of(pipeline.pre, Kind::device) || !ProcessorPipeline::stats_step(pipeline.pre) ||
      !ProcessorPipeline::index_of(pipeline.post, Kind::device) || !ProcessorPipeline::stats_step(pipeline.post))
    throw util::ConfigError("processor pipeline (" + ProcessorPipeline::names(pipeline.pre) + " / " +
                            ProcessorPipeline::names(pipeline.post) +
                            ") lacks a device step or the (un)normalizer step");
  if (pipeline.has_language() != language.has_value())
    throw util::ConfigError(language
                                ? "language settings given to a processor pipeline without a tokenizer step (" +
                                      ProcessorPipeline::names(pipeline.pre) + ")"
                                : "the processor pipeline tokenizes the task (" +
                                      ProcessorPipeline::names(pipeline.pre) + ") but no language settings were given");
  for (const auto& [type, mode] : norm_map) {
    if (std::find(kNormFeatureTypes.begin(), kNormFeatureTypes.end(), type) == kNormFeatureTypes.end())
      throw util::ConfigError("normalization_mapping: unknown feature type '" + type +
                              "' (valid: VISUAL, STATE, ENV, ACTION)");
    data::parse_norm_mode(mode);
  }
  PolicyProcessors p;
  p.pipeline_ = pipeline;
  p.device_ = device;
  p.normalizer_.features = features.inputs;
  p.normalizer_.features.insert(p.normalizer_.features.end(), features.outputs.begin(), features.outputs.end());
  p.normalizer_.norm_map = norm_map;
  p.normalizer_.stats = NormalizerStep::lerobot_stats(stats, p.normalizer_.features);
  p.unnormalizer_.features = features.outputs;
  p.unnormalizer_.norm_map = norm_map;
  p.unnormalizer_.stats = NormalizerStep::lerobot_stats(stats, p.unnormalizer_.features);
  // GR00T's VLM step tokenizes its own prompt (for_policy sets groot_).
  if (language && ProcessorPipeline::index_of(pipeline.pre, Kind::tokenizer))
    p.language_ = std::make_shared<TaskTokenizer>(*language);
  return p;
}

PolicyProcessors PolicyProcessors::for_policy(
    const Policy& policy, const PolicyFeatures& fallback, const data::DatasetStats& stats,
    const std::vector<std::pair<std::string, std::string>>& norm_map_override) {
  PolicyFeatures features = policy.features();
  if (features.empty()) features = fallback;
  auto config = policy.config();
  std::vector<std::pair<std::string, std::string>> norm_map;
  auto mapping = policy.normalization_mapping();
  if (config.contains("normalization_mapping") && config["normalization_mapping"].is_object()) {
    for (const auto& [type, mode] : config["normalization_mapping"].items())
      if (mapping.count(type)) norm_map.emplace_back(type, mapping.at(type));
  }
  for (const auto& [type, mode] : mapping)
    if (std::none_of(norm_map.begin(), norm_map.end(), [&](const auto& e) { return e.first == type; }))
      norm_map.emplace_back(type, mode);
  // The option's entries replace the policy's mode of the feature types they name; the others keep
  // the policy's (a partial table must not leave, say, the action unnormalized).
  for (const auto& [type, mode] : norm_map_override) {
    auto entry = std::find_if(norm_map.begin(), norm_map.end(), [&](const auto& e) { return e.first == type; });
    if (entry != norm_map.end())
      entry->second = mode;
    else
      norm_map.emplace_back(type, mode);
  }
  std::string device =
      config.contains("device") && config["device"].is_string() ? config["device"].get<std::string>() : "cpu";
  auto processors =
      build(features, norm_map, stats, device, policy.language_settings(), policy_spec(policy.type()).processors);
  if (ProcessorPipeline::index_of(processors.pipeline_.pre, ProcessorStepKind::groot_pack)) {
    processors.groot_ = groot::GrootProcessorSteps::for_policy(policy);
    // A base checkpoint's own statistics replace the dataset's (make_groot_pre_post_processors'
    // padded_stats), and its decode step, which inlines them, has no state file.
    if (auto checkpoint = processors.groot_->checkpoint_flat_stats()) {
      processors.normalizer_.stats = std::move(*checkpoint);
      processors.unnormalizer_.stats.clear();
      for (const auto& other : processors.pipeline_.other_posts)
        if (ProcessorPipeline::index_of(other, ProcessorStepKind::groot_decode)) processors.pipeline_.post = other;
    }
  }
  // pi0/pi05 write their relative-action settings into the (disabled) relative step, as LeRobot does.
  if (config.contains("relative_exclude_joints") && config["relative_exclude_joints"].is_array())
    processors.relative_config_["exclude_joints"] = config["relative_exclude_joints"];
  if (config.contains("action_feature_names") && config["action_feature_names"].is_array())
    processors.relative_config_["action_names"] = config["action_feature_names"];
  return processors;
}

std::optional<data::FeatureStats> NormalizerStep::stats_for(const std::string& key, const torch::Tensor& x,
                                                            const torch::Tensor* dataset_index) const {
  auto plain = stats.find(key);
  if (per_dataset.empty()) return plain == stats.end() ? std::nullopt : std::optional(plain->second);
  if (!dataset_index)
    throw util::DataError(
        "the policy normalizes each sample with its dataset's stats (dataset.stats = "
        "\"per_dataset\"), but the batch has no '" +
            std::string(data::kDatasetIndexKey) + "'",
        "feed it batches of the mixture it was trained on, or load one dataset's processors: "
        "lrhost eval --dataset-name NAME, lr.policy.load(dir, {dataset_name = NAME})");
  // The datasets' entries for `key`: all or none (a feature some datasets have stats for and others
  // not cannot be normalized per sample).
  std::vector<const data::FeatureStats*> entries;
  for (const auto& [dataset, dataset_stats] : per_dataset) {
    auto found = dataset_stats.find(key);
    entries.push_back(found == dataset_stats.end() ? nullptr : &found->second);
  }
  if (std::all_of(entries.begin(), entries.end(), [](const auto* e) { return e == nullptr; })) return std::nullopt;
  const auto missing = std::find(entries.begin(), entries.end(), nullptr);
  if (missing != entries.end())
    throw util::DataError("per-dataset stats: dataset '" + per_dataset[missing - entries.begin()].first +
                          "' has no stats of '" + key + "', which other datasets of the policy have");
  // The index stays on its device (no copy to the host, so no wait for a GPU, every batch); a
  // host-side index is range-checked here, a mixture's is in range by construction.
  const auto which = dataset_index->to(torch::kLong).flatten();
  const auto datasets = static_cast<int64_t>(per_dataset.size());
  if (which.is_cpu() && which.numel() && (which.min().item<int64_t>() < 0 || which.max().item<int64_t>() >= datasets))
    throw util::DataError("'" + std::string(data::kDatasetIndexKey) + "' holds a value outside 0.." +
                          std::to_string(datasets - 1) + " (the policy's " + std::to_string(datasets) + " datasets)");
  // Each stat (those every dataset has) stacked over the datasets [datasets, stat shape], one row per
  // sample, then shaped to broadcast against x's trailing dimensions: per sample, the same arithmetic
  // as its dataset's stats.
  data::FeatureStats picked;
  for (const std::string& name : entries.front()->names()) {
    if (std::any_of(entries.begin(), entries.end(), [&](auto* e) { return !e->has(name); })) continue;
    std::vector<torch::Tensor> rows;
    for (const auto* entry : entries) rows.push_back(entry->get(name));
    torch::Tensor value = torch::stack(rows).to(which.device()).index_select(0, which);
    std::vector<int64_t> shape{value.size(0)};
    for (int64_t d = value.dim(); d < x.dim(); ++d) shape.push_back(1);
    for (int64_t d = 1; d < value.dim(); ++d) shape.push_back(value.size(d));
    picked.set(name, value.reshape(shape));
  }
  return picked;
}

void PolicyProcessors::set_per_dataset_stats(const std::vector<std::pair<std::string, data::DatasetStats>>& stats) {
  if (stats.empty()) throw util::ConfigError("set_per_dataset_stats: no datasets given");
  if (groot_)
    throw util::NotImplemented(
        "dataset.stats = \"per_dataset\" with a GR00T policy is not implemented in lrhost "
        "(its pack step normalizes with one set of min/max stats)");
  normalizer_.per_dataset.clear();
  unnormalizer_.per_dataset.clear();
  for (const auto& [name, dataset_stats] : stats) {
    normalizer_.per_dataset.emplace_back(name, NormalizerStep::lerobot_stats(dataset_stats, normalizer_.features));
    unnormalizer_.per_dataset.emplace_back(name, NormalizerStep::lerobot_stats(dataset_stats, unnormalizer_.features));
  }
  normalizer_.stats = normalizer_.per_dataset.front().second;
  unnormalizer_.stats = unnormalizer_.per_dataset.front().second;
}

std::vector<std::string> PolicyProcessors::per_dataset_names() const {
  std::vector<std::string> names;
  for (const auto& [name, stats] : normalizer_.per_dataset) names.push_back(name);
  return names;
}

PolicyProcessors PolicyProcessors::for_dataset(const std::string& name) const {
  auto at = [&](const NormalizerStep& step) -> const data::DatasetStats* {
    for (const auto& [dataset, stats] : step.per_dataset)
      if (dataset == name) return &stats;
    return nullptr;
  };
  if (!at(normalizer_))
    throw util::ConfigError(normalizer_.per_dataset.empty()
                                ? "dataset_name=" + name +
                                      ": the policy normalizes with one set of stats (it was not trained with "
                                      "dataset.stats = \"per_dataset\"); leave dataset_name out"
                                : "dataset_name=" + name + ": the policy has no stats of that dataset (its datasets: " +
                                      util::quoted_list(per_dataset_names()) + ")");
  PolicyProcessors one = *this;
  one.normalizer_.stats = *at(normalizer_);
  one.unnormalizer_.stats = *at(unnormalizer_);
  one.normalizer_.per_dataset.clear();
  one.unnormalizer_.per_dataset.clear();
  return one;
}

Batch PolicyProcessors::renamed(const Batch& batch) const {
  if (rename_map_.empty()) return batch;
  check_rename_map_keys(rename_map_, batch);  // a rename that matches nothing is a mistake, never a no-op
  Batch out;
  for (const auto& [key, tensor] : batch) {
    auto rename = rename_map_.find(key);
    out[rename == rename_map_.end() ? key : rename->second] = tensor;
  }
  return out;
}

void PolicyProcessors::set_rename_map(const std::map<std::string, std::string>& renames) {
  rename_map_ = renames;
}

void PolicyProcessors::set_task_table(const std::vector<std::string>& tasks) const {
  if (groot_) return groot_->set_task_table(tasks);
  if (!language_) throw util::ConfigError("the policy's preprocessor has no language steps, so it takes no tasks");
  language_->set_task_strings(tasks);
  // A prompt that depends on each batch (pi05's state) is tokenized per batch; a task-only text once.
  if (ProcessorPipeline::index_of(pipeline_.pre, ProcessorStepKind::state_prompt)) return;
  std::vector<std::string> texts = tasks;
  if (ProcessorPipeline::index_of(pipeline_.pre, ProcessorStepKind::task_new_line))
    for (auto& text : texts) text = append_new_line(text);
  language_->set_task_table(texts);
}

Batch PolicyProcessors::normalize(const Batch& batch) const {
  return preprocess(batch, nullptr);
}

Batch PolicyProcessors::normalize(const Batch& batch, const std::vector<std::string>& tasks) const {
  if (!has_language())
    throw util::ConfigError("the policy's preprocessor has no language steps, so it takes no task strings");
  return preprocess(batch, &tasks);
}

Batch PolicyProcessors::preprocess_before_device(const Batch& batch) const {
  auto device = ProcessorPipeline::index_of(pipeline_.pre, ProcessorStepKind::device);
  return preprocess(batch, nullptr, 0, device.value_or(pipeline_.pre.size()));
}

Batch PolicyProcessors::preprocess_after_device(const Batch& batch) const {
  auto device = ProcessorPipeline::index_of(pipeline_.pre, ProcessorStepKind::device);
  return device ? preprocess(batch, nullptr, *device + 1, pipeline_.pre.size()) : batch;
}

Batch PolicyProcessors::preprocess(const Batch& batch, const std::vector<std::string>* tasks) const {
  return preprocess(batch, tasks, 0, pipeline_.pre.size());
}

Batch PolicyProcessors::preprocess(const Batch& batch, const std::vector<std::string>* tasks, std::size_t first,
                                   std::size_t last) const {
  constexpr const char* kTokens = "observation.language.tokens";
  constexpr const char* kMask = "observation.language.attention_mask";
  auto task_index = [](const Batch& b) -> const torch::Tensor& {
    auto found = b.find("task_index");
    if (found == b.end())
      throw util::ConfigError(
          "the policy's preprocessor tokenizes the task, but the batch has neither "
          "'observation.language.tokens' nor 'task_index'",
          "give the task strings: policy:preprocess(batch, {\"pick up the cube\", ...})");
    return found->second;
  };
  Batch out = batch;
  // The text the language steps hand on (LeRobot's complementary_data["task"]): the given strings, or
  // the dataset's strings of task_index where a step needs the text itself; without text, the tokens
  // come from the task table (or the batch already has them).
  std::optional<std::vector<std::string>> texts;
  if (tasks) texts = *tasks;
  for (std::size_t i = first; i < last; ++i) {
    const ProcessorStep& step = pipeline_.pre[i];
    switch (step.kind) {
      case ProcessorStepKind::rename:
        out = renamed(out);
        break;
      case ProcessorStepKind::task_new_line:
        if (texts)
          for (auto& text : *texts) text = append_new_line(text);
        break;
      case ProcessorStepKind::state_prompt: {
        if (!texts && out.count(kTokens)) break;
        if (!texts) texts = language_->task_strings(task_index(out));
        auto state = out.find("observation.state");
        if (state == out.end())
          throw util::DataError("the pi05 preprocessor needs 'observation.state' for its prompt (" +
                                step.registry_name + "), the batch has none");
        texts = state_prompts(*texts, state->second);
        break;
      }
      case ProcessorStepKind::tokenizer: {
        LanguageTokens tokens;
        torch::Device device(torch::kCPU);
        if (texts) {
          tokens = language_->tokenize(*texts);
          if (!out.empty()) device = out.begin()->second.device();
        } else if (!out.count(kTokens)) {
          const auto& index = task_index(out);
          tokens = language_->tokenize_indices(index);
          device = index.device();
        } else {
          break;
        }
        out[kTokens] = tokens.tokens.to(device);
        out[kMask] = tokens.attention_mask.to(device);
        break;
      }
      case ProcessorStepKind::normalizer:
        out = normalized(std::move(out));
        break;
      case ProcessorStepKind::groot_pack:
        out = groot_->pack(std::move(out), normalizer_.stats);
        break;
      case ProcessorStepKind::groot_vlm_encode:
        out = groot_->encode(std::move(out), texts ? &*texts : nullptr);
        break;
      case ProcessorStepKind::to_batch:          // batches are already batched
      case ProcessorStepKind::device:            // and on the policy's device
      case ProcessorStepKind::relative_actions:  // enabled = false: a no-op (read_step refuses true)
      case ProcessorStepKind::absolute_actions:
      case ProcessorStepKind::unnormalizer:
      case ProcessorStepKind::groot_unpack:
      case ProcessorStepKind::groot_decode:
        break;
    }
  }
  return out;
}

Batch PolicyProcessors::normalized(Batch out) const {
  const torch::Tensor* dataset_index = dataset_index_of(out);
  for (const auto& feature : normalizer_.features) {
    if (feature.type == "ACTION") continue;
    auto entry = out.find(feature.key);
    if (entry == out.end()) continue;
    const auto stats = normalizer_.stats_for(feature.key, entry->second, dataset_index);
    if (!stats) continue;
    const data::NormMode mode = normalizer_.mode_of(feature.type);
    // Camera frames normalized before the device copy (pi05's order) are still the loader's uint8:
    // they become float in [0, 1] first, as the loader makes them after its copy.
    if (feature.type == "VISUAL" && mode != data::NormMode::Identity && entry->second.scalar_type() == torch::kByte)
      entry->second = entry->second.to(torch::kFloat).div_(255.0);
    entry->second = data::normalize(entry->second, *stats, mode, normalizer_.eps);
    // A mixture's zero-padded dimensions stay zero (as pad_vector's are): no data behind them.
    if (feature.type != "VISUAL") entry->second = data::zero_padded_dimensions(out, feature.key, entry->second);
  }
  auto action = out.find("action");
  if (action == out.end()) return out;
  if (const auto action_stats = normalizer_.stats_for("action", action->second, dataset_index))
    action->second = data::zero_padded_dimensions(
        out, "action", data::normalize(action->second, *action_stats, normalizer_.mode_of("ACTION"), normalizer_.eps));
  return out;
}

void PolicyProcessors::require_stats(const std::string& dataset) const {
  if (groot_) {
    // GR00T's pack step normalizes state and action with min / max.
    for (const char* key : {"observation.state", "action"}) {
      auto stats = normalizer_.stats.find(key);
      if (stats == normalizer_.stats.end() || !stats->second.has("min") || !stats->second.has("max"))
        throw util::DataError(
            std::string("GR00T normalizes '") + key + "' with its min and max, which the stats of " + dataset + " lack",
            "recompute the dataset's stats (lrhost dataset stats) or use a dataset with meta/stats.json");
    }
    return;
  }
  auto check = [&](const data::DatasetStats& all, const std::string& where) {
    for (const auto& feature : normalizer_.features) {
      auto stats = all.find(feature.key);
      if (stats != all.end())
        data::require_norm_stats(stats->second, feature.key, normalizer_.mode_of(feature.type), where);
    }
  };
  if (normalizer_.per_dataset.empty()) return check(normalizer_.stats, dataset);
  for (const auto& [name, stats] : normalizer_.per_dataset) {
    try {
      check(stats, dataset);
    } catch (const util::DataError& error) {
      throw util::DataError("dataset.mixture '" + name + "': " + error.what(), error.hint());
    }
  }
}

torch::Tensor PolicyProcessors::unnormalize(const torch::Tensor& action, const torch::Tensor& dataset_index) const {
  if (groot_) return groot_->unpack(action, unnormalizer_.stats);
  const data::NormMode mode = unnormalizer_.mode_of("ACTION");
  if (!unnormalizer_.per_dataset.empty() && dataset_index.defined()) {
    const auto stats = unnormalizer_.stats_for("action", action, &dataset_index);
    return stats ? data::unnormalize(action, *stats, mode, unnormalizer_.eps) : action;
  }
  auto stats = unnormalizer_.stats.find("action");  // one set of stats, or the first dataset's
  if (stats == unnormalizer_.stats.end()) return action;
  return data::unnormalize(action, stats->second, mode, unnormalizer_.eps);
}

bool PolicyProcessors::operator==(const PolicyProcessors& other) const {
  auto language_equal = [&] {
    if (!language_ || !other.language_) return !language_ && !other.language_;
    const auto &a = language_->settings(), &b = other.language_->settings();
    return a.tokenizer_name == b.tokenizer_name && a.max_length == b.max_length && a.padding == b.padding;
  };
  return pipeline_ == other.pipeline_ && device_ == other.device_ && rename_map_ == other.rename_map_ &&
         relative_config_ == other.relative_config_ && language_equal() &&
         (groot_ && other.groot_ ? *groot_ == *other.groot_ : !groot_ && !other.groot_) &&
         steps_equal(normalizer_, other.normalizer_) && steps_equal(unnormalizer_, other.unnormalizer_);
}

}  // namespace lrhost::policy
