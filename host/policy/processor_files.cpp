// The LeRobot files of a policy's processors (processor/pipeline.py's format): writing
// policy_preprocessor.json / policy_postprocessor.json with their *_step_<i>_<registry_name>.safetensors
// state files exactly as LeRobot writes them, and reading them back checked step by step against
// the registered pipelines, every error naming the file, the step and what was expected. The
// pipelines at run time are processors.cpp's; see processors.hpp.
#include <algorithm>

#include "host/io/atomic_dir.hpp"
#include "host/io/hf_cache.hpp"
#include "host/io/safetensors.hpp"
#include "host/policy/groot/groot_processor_steps.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

ordered_json features_json(const std::vector<PolicyFeature>& features) {
  return PolicyFeatures::list_to_json(features);
}

ordered_json norm_map_json(const std::vector<std::pair<std::string, std::string>>& norm_map) {
  ordered_json j = ordered_json::object();
  for (const auto& [type, mode] : norm_map) j[type] = mode;
  return j;
}

ordered_json normalizer_config(const NormalizerStep& step) {
  return {{"eps", step.eps}, {"features", features_json(step.features)}, {"norm_map", norm_map_json(step.norm_map)}};
}

ordered_json step_entry(const std::string& registry_name, ordered_json config, const char* state_file = nullptr) {
  ordered_json entry;
  entry["registry_name"] = registry_name;
  entry["config"] = std::move(config);
  if (state_file) entry["state_file"] = state_file;
  return entry;
}

ordered_json parse_json_file(const fs::path& file) {
  return io::read_json_file(file, "the file is corrupt or truncated; save the policy again");
}

const ordered_json& field(const ordered_json& object, const std::string& key, const std::string& where) {
  if (!object.is_object() || !object.contains(key)) throw util::DataError(where + ": missing '" + key + "'");
  return object[key];
}

// The registered policy types, for messages about pipelines lrhost does not read.
std::string pipeline_hint() {
  return "lrhost reads the processor pipelines of its policy types (" + util::quoted_list(registered_policy_types()) +
         "); other step lists are not supported";
}

// The registry names of a pipeline file's steps ("?" where a step has none).
std::vector<std::string> step_names(const ordered_json& doc) {
  std::vector<std::string> names;
  if (!doc.is_object() || !doc.contains("steps") || !doc["steps"].is_array()) return names;
  for (const auto& step : doc["steps"])
    names.push_back(step.is_object() && step.contains("registry_name") && step["registry_name"].is_string()
                        ? step["registry_name"].get<std::string>()
                        : (step.is_object() && step.contains("class") ? step["class"].dump() : "?"));
  return names;
}

// The registered pipeline a preprocessor file was written from: an exact match of its step names,
// else the one agreeing at most positions (so that the error names the first step that differs).
const ProcessorPipeline& closest_pipeline(const std::vector<std::string>& names) {
  const ProcessorPipeline* best = nullptr;
  std::size_t best_score = 0;
  for (const auto* spec : policy_specs()) {
    const auto& steps = spec->processors.pre;
    if (ProcessorPipeline::matches(steps, names)) return spec->processors;
    std::size_t score = 0;
    for (std::size_t i = 0; i < std::min(steps.size(), names.size()); ++i) score += steps[i].registry_name == names[i];
    if (steps.size() == names.size()) score += names.size() + 1;  // same length first
    if (!best || score > best_score) best = &spec->processors, best_score = score;
  }
  return *best;
}

// The steps of a pipeline file, checked against the registry names of `expected`.
const ordered_json& checked_steps(const ordered_json& doc, const fs::path& file, const std::string& name,
                                  const std::vector<ProcessorStep>& expected) {
  const std::string where = file.string();
  if (!doc.is_object()) throw util::DataError(where + ": expected a JSON object {\"name\", \"steps\"}");
  const auto& doc_name = field(doc, "name", where);
  if (!doc_name.is_string() || doc_name.get<std::string>() != name)
    throw util::DataError(where + ": 'name' is " + doc_name.dump() + ", expected \"" + name + "\"");
  const auto& steps = field(doc, "steps", where);
  const std::string expected_list = ProcessorPipeline::names(expected);
  if (!steps.is_array() || steps.size() != expected.size())
    throw util::DataError(where + ": expected " + std::to_string(expected.size()) + " steps (" + expected_list + ")",
                          pipeline_hint());
  const auto names = step_names(doc);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (names[i] != expected[i].registry_name)
      throw util::DataError(where + ": step " + std::to_string(i) + " is '" + names[i] + "', expected '" +
                                expected[i].registry_name + "' (steps: " + expected_list + ")",
                            pipeline_hint());
    if (!steps[i].contains("config") || !steps[i]["config"].is_object())
      throw util::DataError(where + ": step " + std::to_string(i) + " ('" + names[i] + "') has no 'config' object");
  }
  return steps;
}

NormalizerStep parse_normalizer(const ordered_json& step, const fs::path& dir, const fs::path& file, std::size_t index,
                                const std::string& expected_state_file) {
  const std::string where = file.string() + " step " + std::to_string(index);
  const auto& config = step["config"];
  NormalizerStep out;
  const auto& eps = field(config, "eps", where + " config");
  if (!eps.is_number()) throw util::DataError(where + ": 'eps' must be a number, got " + eps.dump());
  out.eps = eps.get<double>();
  const auto& features = field(config, "features", where + " config");
  if (!features.is_object()) throw util::DataError(where + ": 'features' must be an object {key: {type, shape}}");
  try {
    out.features = PolicyFeatures::list_from_json(features, where + " features");
  } catch (const util::Error& error) {
    throw util::DataError(error.what(), error.hint());
  }
  const auto& norm_map = field(config, "norm_map", where + " config");
  if (!norm_map.is_object()) throw util::DataError(where + ": 'norm_map' must be an object {type: mode}");
  for (const auto& [type, mode] : norm_map.items()) {
    if (std::find(kNormFeatureTypes.begin(), kNormFeatureTypes.end(), type) == kNormFeatureTypes.end() ||
        !mode.is_string())
      throw util::DataError(where + ": norm_map entry '" + type + "': " + mode.dump() +
                            " is not a feature type (VISUAL, STATE, ENV, ACTION) with a mode name");
    try {
      data::parse_norm_mode(mode.get<std::string>());
    } catch (const util::Error& error) {
      throw util::DataError(where + ": norm_map['" + type + "']: " + error.what());
    }
    out.norm_map.emplace_back(type, mode.get<std::string>());
  }
  for (const auto& [key, value] : config.items())
    if (key != "eps" && key != "features" && key != "norm_map")
      throw util::DataError(where + ": unknown config key '" + key + "' (lrhost reads eps, features, norm_map)",
                            key == "normalize_observation_keys" ? "selective normalization is not supported" : "");
  if (!step.contains("state_file")) return out;  // no stats were given when it was saved
  if (!step["state_file"].is_string() || step["state_file"].get<std::string>() != expected_state_file)
    throw util::DataError(where + ": 'state_file' is " + step["state_file"].dump() + ", expected \"" +
                          expected_state_file + "\"");
  auto content = io::read_safetensors(dir / expected_state_file);
  for (const auto& [flat, tensor] : content.tensors) {
    auto dot = flat.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == flat.size())
      throw util::DataError((dir / expected_state_file).string() + ": tensor '" + flat +
                            "' is not named '<feature>.<stat>'");
    if (!torch::isFloatingType(tensor.scalar_type()) && tensor.scalar_type() != torch::kLong &&
        tensor.scalar_type() != torch::kInt)
      throw util::DataError((dir / expected_state_file).string() + ": stat '" + flat + "' has dtype " +
                            std::string(c10::toString(tensor.scalar_type())) + ", expected a number type");
    out.stats[flat.substr(0, dot)].set(flat.substr(dot + 1), tensor);
  }
  out.stats = NormalizerStep::lerobot_stats(out.stats, out.features);
  return out;
}

// LeRobot's TokenizerProcessorStep config as lrhost runs it: right padding, truncation, the "task" key;
// the tokenizer folder resolved from tokenizer_name (a folder or a cached hub id).
LanguageSettings parse_tokenizer_step(const ordered_json& step, const fs::path& file, std::size_t index) {
  const std::string where = file.string() + " step " + std::to_string(index) + " (tokenizer_processor)";
  const auto& config = step["config"];
  auto get = [&](const char* key, auto check, const char* expected) -> const ordered_json& {
    const auto& value = field(config, key, where);
    if (!check(value)) throw util::DataError(where + ": '" + key + "' must be " + expected + ", got " + value.dump());
    return value;
  };
  LanguageSettings settings;
  settings.max_length =
      get(
          "max_length", [](const ordered_json& v) { return v.is_number_integer() && v.get<int64_t>() > 0; },
          "a positive integer")
          .get<int64_t>();
  settings.padding = get(
                         "padding", [](const ordered_json& v) { return v == "longest" || v == "max_length"; },
                         "'longest' or 'max_length'")
                         .get<std::string>();
  get(
      "task_key", [](const ordered_json& v) { return v == "task"; }, "\"task\" (lrhost reads the task of each frame)");
  get(
      "padding_side", [](const ordered_json& v) { return v == "right"; }, "\"right\"");
  get(
      "truncation", [](const ordered_json& v) { return v == true; }, "true");
  if (!config.contains("tokenizer_name"))
    throw util::DataError(where +
                              ": no 'tokenizer_name' (LeRobot leaves it out when the step was given a tokenizer "
                              "object)",
                          "set tokenizer_name to the VLM's folder or hub id, e.g. "
                          "\"HuggingFaceTB/SmolVLM2-500M-Video-Instruct\"");
  settings.tokenizer_name =
      get(
          "tokenizer_name", [](const ordered_json& v) { return v.is_string(); }, "a folder or hub id")
          .get<std::string>();
  for (const auto& [key, value] : config.items())
    if (key != "max_length" && key != "task_key" && key != "padding_side" && key != "padding" && key != "truncation" &&
        key != "tokenizer_name")
      throw util::DataError(where + ": unknown config key '" + key + "'");
  settings.tokenizer_dir = io::resolve_model_dir(settings.tokenizer_name, where + " tokenizer_name");
  return settings;
}

// An `enabled` flag of the relative/absolute action steps: false is a no-op; true converts actions
// relative to the state of the same call, which lrhost does not implement.
void check_disabled(const ordered_json& config, const std::string& where) {
  const auto& enabled = field(config, "enabled", where + " config");
  if (!enabled.is_boolean()) throw util::DataError(where + ": 'enabled' must be true or false, got " + enabled.dump());
  if (enabled.get<bool>())
    throw util::NotImplemented(where + ": 'enabled' = true (relative actions) is not implemented in lrhost",
                               "train with policy.use_relative_actions=false");
}

// A GR00T step's flat "<feature>.<stat>" state file (every stat LeRobot gave the step), when the
// entry names one; the stats stay as stored (float32, LeRobot's torch.as_tensor).
data::DatasetStats read_flat_stats(const ordered_json& step, const fs::path& dir, const std::string& where,
                                   const std::string& expected_state_file) {
  data::DatasetStats stats;
  if (!step.contains("state_file")) return stats;
  if (!step["state_file"].is_string() || step["state_file"].get<std::string>() != expected_state_file)
    throw util::DataError(where + ": 'state_file' is " + step["state_file"].dump() + ", expected \"" +
                          expected_state_file + "\"");
  for (const auto& [flat, tensor] : io::read_safetensors(dir / expected_state_file).tensors) {
    const auto dot = flat.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == flat.size())
      throw util::DataError((dir / expected_state_file).string() + ": tensor '" + flat +
                            "' is not named '<feature>.<stat>'");
    stats[flat.substr(0, dot)].set(flat.substr(dot + 1), tensor);
  }
  return stats;
}

bool string_list(const ordered_json& value) {
  return value.is_array() &&
         std::all_of(value.begin(), value.end(), [](const ordered_json& v) { return v.is_string(); });
}

}  // namespace

std::string PolicyProcessors::normalizer_state_file() const {
  auto index = *ProcessorPipeline::stats_step(pipeline_.pre);
  return step_state_file(pre_name_, index, pipeline_.pre[index].registry_name);
}

std::string PolicyProcessors::unnormalizer_state_file() const {
  auto index = *ProcessorPipeline::stats_step(pipeline_.post);
  return step_state_file(post_name_, index, pipeline_.post[index].registry_name);
}

PolicyProcessors::StepCodec PolicyProcessors::codec(ProcessorStepKind kind) {
  // One case per step kind, its writing and its reading side by side (the compiler checks that every
  // kind has one). A step written as {} that lrhost reads nothing from shares `empty`.
  auto empty = [](const PolicyProcessors&, const ProcessorStep& step, const std::string&) {
    return step_entry(step.registry_name, ordered_json::object());
  };
  auto nothing = [](PolicyProcessors&, const StepFileEntry&) {};
  switch (kind) {
    case ProcessorStepKind::rename:
      return {[](const PolicyProcessors& p, const ProcessorStep& step, const std::string&) {
                ordered_json rename;
                rename["rename_map"] = ordered_json::object();
                for (const auto& [from, to] : p.rename_map_) rename["rename_map"][from] = to;
                return step_entry(step.registry_name, rename);
              },
              [](PolicyProcessors& p, const StepFileEntry& in) {
                if (!in.config.contains("rename_map") || !in.config["rename_map"].is_object())
                  throw util::DataError(in.where + " needs a 'rename_map' object");
                for (const auto& [from, to] : in.config["rename_map"].items()) {
                  if (!to.is_string())
                    throw util::DataError(in.file.string() + ": rename_map['" + from + "'] must be a key name, got " +
                                          to.dump());
                  p.rename_map_[from] = to.get<std::string>();
                }
              }};
    case ProcessorStepKind::to_batch:
    case ProcessorStepKind::task_new_line:
      return {empty, nothing};
    case ProcessorStepKind::relative_actions:
      return {[](const PolicyProcessors& p, const ProcessorStep& step, const std::string&) {
                return step_entry(step.registry_name, p.relative_config_);
              },
              [](PolicyProcessors& p, const StepFileEntry& in) {
                check_disabled(in.config, in.where);
                for (const auto& [key, value] : in.config.items()) {
                  if (key == "exclude_joints" ? !string_list(value)
                      : key == "action_names" ? !(value.is_null() || string_list(value))
                                              : key != "enabled")
                    throw util::DataError(in.where + ": " +
                                          (key == "exclude_joints" || key == "action_names"
                                               ? "'" + key + "' must be a list of names" +
                                                     (key == "action_names" ? " or null" : "") + ", got " + value.dump()
                                               : "unknown config key '" + key +
                                                     "' (lrhost reads enabled, exclude_joints, action_names)"));
                }
                p.relative_config_ = in.config;
              }};
    case ProcessorStepKind::absolute_actions:
      return {[](const PolicyProcessors&, const ProcessorStep& step, const std::string&) {
                return step_entry(step.registry_name, {{"enabled", false}});
              },
              [](PolicyProcessors&, const StepFileEntry& in) {
                check_disabled(in.config, in.where);
                for (const auto& [key, value] : in.config.items())
                  if (key != "enabled")
                    throw util::DataError(in.where + ": unknown config key '" + key + "' (lrhost reads enabled)");
              }};
    case ProcessorStepKind::state_prompt:
      // LeRobot writes {} (its fields keep their defaults: max_state_dim, unused by the step, and task_key).
      return {empty, [](PolicyProcessors&, const StepFileEntry& in) {
                for (const auto& [key, value] : in.config.items()) {
                  if (key == "task_key" && value == "task") continue;
                  if (key == "max_state_dim" && value.is_number_integer()) continue;
                  throw util::DataError(in.where + ": config key '" + key + "' = " + value.dump() +
                                        " is not read by lrhost (it reads the task key \"task\" and max_state_dim)");
                }
              }};
    case ProcessorStepKind::tokenizer:
      return {[](const PolicyProcessors& p, const ProcessorStep& step, const std::string&) {
                const auto& settings = p.language_->settings();
                return step_entry(step.registry_name, {{"max_length", settings.max_length},
                                                       {"task_key", "task"},
                                                       {"padding_side", "right"},
                                                       {"padding", settings.padding},
                                                       {"truncation", true},
                                                       {"tokenizer_name", settings.tokenizer_name}});
              },
              [](PolicyProcessors& p, const StepFileEntry& in) {
                p.language_ = std::make_shared<TaskTokenizer>(parse_tokenizer_step(in.entry, in.file, in.index));
              }};
    case ProcessorStepKind::device:
      return {[](const PolicyProcessors&, const ProcessorStep& step, const std::string& device) {
                return step_entry(step.registry_name, {{"device", device}, {"float_dtype", nullptr}});
              },
              [](PolicyProcessors& p, const StepFileEntry& in) {
                if (!in.config.contains("device") || !in.config["device"].is_string())
                  throw util::DataError(in.where + " needs a string 'device'");
                // The preprocessor's device is the policy's; the postprocessor's is always "cpu".
                if (!in.postprocessor) p.device_ = in.config["device"].get<std::string>();
              }};
    case ProcessorStepKind::normalizer:
      return {[](const PolicyProcessors& p, const ProcessorStep& step, const std::string&) {
                const auto file = p.normalizer_state_file();
                return step_entry(step.registry_name, normalizer_config(p.normalizer_),
                                  p.normalizer_.stats.empty() ? nullptr : file.c_str());
              },
              [](PolicyProcessors& p, const StepFileEntry& in) {
                p.normalizer_ = parse_normalizer(in.entry, in.dir, in.file, in.index, p.normalizer_state_file());
              }};
    case ProcessorStepKind::unnormalizer:
      return {[](const PolicyProcessors& p, const ProcessorStep& step, const std::string&) {
                const auto file = p.unnormalizer_state_file();
                return step_entry(step.registry_name, normalizer_config(p.unnormalizer_),
                                  p.unnormalizer_.stats.empty() ? nullptr : file.c_str());
              },
              [](PolicyProcessors& p, const StepFileEntry& in) {
                p.unnormalizer_ = parse_normalizer(in.entry, in.dir, in.file, in.index, p.unnormalizer_state_file());
              }};
    case ProcessorStepKind::groot_pack:
      return {[](const PolicyProcessors& p, const ProcessorStep& step, const std::string&) {
                const auto file = p.normalizer_state_file();
                return step_entry(step.registry_name, p.groot_->pack_config(),
                                  p.normalizer_.stats.empty() ? nullptr : file.c_str());
              },
              [](PolicyProcessors& p, const StepFileEntry& in) {
                if (!p.groot_) p.groot_ = std::make_shared<groot::GrootProcessorSteps>();
                p.groot_->read_pack_config(in.config, in.where);
                p.normalizer_.stats = read_flat_stats(in.entry, in.dir, in.where, p.normalizer_state_file());
              }};
    case ProcessorStepKind::groot_vlm_encode:
      return {[](const PolicyProcessors& p, const ProcessorStep& step, const std::string& device) {
                return step_entry(step.registry_name, p.groot_->vlm_config(device));
              },
              [](PolicyProcessors& p, const StepFileEntry& in) {
                if (!p.groot_) p.groot_ = std::make_shared<groot::GrootProcessorSteps>();
                p.groot_->read_vlm_config(in.config, in.where);
              }};
    case ProcessorStepKind::groot_decode:
      // The checkpoint's statistics are inline in the config (LeRobot's GrootN17ActionDecodeStep).
      return {[](const PolicyProcessors& p, const ProcessorStep& step, const std::string&) {
                return step_entry(step.registry_name, p.groot_->decode_config());
              },
              [](PolicyProcessors& p, const StepFileEntry& in) {
                if (!p.groot_) p.groot_ = std::make_shared<groot::GrootProcessorSteps>();
                p.groot_->read_decode_config(in.config, in.where);
                p.unnormalizer_.stats.clear();
              }};
    case ProcessorStepKind::groot_unpack:
      return {[](const PolicyProcessors& p, const ProcessorStep& step, const std::string&) {
                const auto file = p.unnormalizer_state_file();
                return step_entry(step.registry_name, p.groot_->unpack_config(),
                                  p.unnormalizer_.stats.empty() ? nullptr : file.c_str());
              },
              [](PolicyProcessors& p, const StepFileEntry& in) {
                if (!p.groot_) p.groot_ = std::make_shared<groot::GrootProcessorSteps>();
                p.groot_->read_unpack_config(in.config, in.where);
                p.unnormalizer_.stats = read_flat_stats(in.entry, in.dir, in.where, p.unnormalizer_state_file());
              }};
  }
  throw util::Error("unhandled processor step kind");
}

ordered_json PolicyProcessors::step_json(const ProcessorStep& step, const std::string& device) const {
  return codec(step.kind).write(*this, step, device);
}

ordered_json PolicyProcessors::preprocessor_json() const {
  ordered_json doc;
  doc["name"] = pre_name_;
  doc["steps"] = ordered_json::array();
  for (const auto& step : pipeline_.pre) doc["steps"].push_back(step_json(step, device_));
  return doc;
}

ordered_json PolicyProcessors::postprocessor_json() const {
  ordered_json doc;
  doc["name"] = post_name_;
  doc["steps"] = ordered_json::array();
  for (const auto& step : pipeline_.post) doc["steps"].push_back(step_json(step, "cpu"));
  return doc;
}

void PolicyProcessors::save_pipeline_files(const fs::path& dir) const {
  // State files first: a JSON file that names its state file is only written once that file exists.
  if (!normalizer_.stats.empty()) io::write_safetensors(dir / normalizer_state_file(), normalizer_.state());
  if (!unnormalizer_.stats.empty()) io::write_safetensors(dir / unnormalizer_state_file(), unnormalizer_.state());
  io::write_file_atomic(dir / (pre_name_ + ".json"), preprocessor_json().dump(2));
  io::write_file_atomic(dir / (post_name_ + ".json"), postprocessor_json().dump(2));
}

void PolicyProcessors::save(const fs::path& dir) const {
  const std::vector<std::string> datasets = per_dataset_names();
  for (const std::string& name : datasets) {
    // Each dataset's pipeline as LeRobot saves a pipeline named policy_preprocessor_<name>.
    PolicyProcessors one = for_dataset(name);
    one.pre_name_ += "_" + name;
    one.post_name_ += "_" + name;
    one.save_pipeline_files(dir);
  }
  if (!datasets.empty())
    io::write_file_atomic(dir / kPerDatasetStatsFile, ordered_json{{"datasets", datasets}}.dump(2));
  save_pipeline_files(dir);
}

bool PolicyProcessors::present(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / kPreprocessorFile, ec) || fs::exists(dir / kPostprocessorFile, ec);
}

void PolicyProcessors::read_step(const ProcessorStep& step, const ordered_json& entry, std::size_t index,
                                 const fs::path& dir, const fs::path& file, bool postprocessor) {
  const std::string where = file.string() + ": step " + std::to_string(index) + " (" + step.registry_name + ")";
  codec(step.kind).read(*this, StepFileEntry{entry, entry["config"], index, dir, file, where, postprocessor});
}

PolicyProcessors PolicyProcessors::load_pipeline_files(const fs::path& dir, const std::string& suffix) {
  PolicyProcessors p;
  p.pre_name_ += suffix;
  p.post_name_ += suffix;
  const fs::path pre_file = dir / (p.pre_name_ + ".json"), post_file = dir / (p.post_name_ + ".json");
  ordered_json pre = parse_json_file(pre_file);
  p.pipeline_ = closest_pipeline(step_names(pre));
  const auto& pre_steps = checked_steps(pre, pre_file, p.pre_name_, p.pipeline_.pre);
  for (std::size_t i = 0; i < p.pipeline_.pre.size(); ++i)
    p.read_step(p.pipeline_.pre[i], pre_steps[i], i, dir, pre_file, false);
  ordered_json post = parse_json_file(post_file);
  const auto post_names = step_names(post);
  for (const auto& other : p.pipeline_.other_posts)
    if (ProcessorPipeline::matches(other, post_names)) p.pipeline_.post = other;
  const auto& post_steps = checked_steps(post, post_file, p.post_name_, p.pipeline_.post);
  for (std::size_t i = 0; i < p.pipeline_.post.size(); ++i)
    p.read_step(p.pipeline_.post[i], post_steps[i], i, dir, post_file, true);
  return p;
}

PolicyProcessors PolicyProcessors::load(const fs::path& dir) {
  // The datasets of a checkpoint normalized per dataset, in dataset_index order.
  std::vector<std::string> datasets;
  const fs::path list_file = dir / kPerDatasetStatsFile;
  if (fs::exists(list_file)) {
    const ordered_json list = parse_json_file(list_file);
    const ordered_json& names = field(list, "datasets", list_file.string());
    if (!string_list(names) || names.empty())
      throw util::DataError(list_file.string() + ": 'datasets' must be a non-empty list of dataset names");
    datasets = names.get<std::vector<std::string>>();
  }
  PolicyProcessors p = load_pipeline_files(dir, "");
  if (datasets.empty()) return p;
  std::vector<std::pair<std::string, data::DatasetStats>> normalizer, unnormalizer;
  for (const std::string& name : datasets) {
    PolicyProcessors one = load_pipeline_files(dir, "_" + name);
    normalizer.emplace_back(name, one.normalizer_.stats);
    unnormalizer.emplace_back(name, one.unnormalizer_.stats);
  }
  p.normalizer_.per_dataset = std::move(normalizer);
  p.unnormalizer_.per_dataset = std::move(unnormalizer);
  return p;
}

}  // namespace lrhost::policy
