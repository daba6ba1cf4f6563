// Builds the recipe's policy on the CPU and renders its memory plan; see show_plan.hpp.
#include "host/cli/show_plan.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>
#include <cstdio>
#include <cstdlib>

#include "host/accel/memory_plan.hpp"
#include "host/ckpt/pretrained_dir.hpp"
#include "host/data/dataset_meta.hpp"
#include "host/data/mixture/mixture_report.hpp"
#include "host/data/synthetic_push.hpp"
#include "host/io/atomic_dir.hpp"
#include "host/io/hf_cache.hpp"
#include "host/policy/activation_probe.hpp"
#include "host/policy/peft/lora_adapters.hpp"
#include "host/policy/peft/lora_plan.hpp"
#include "host/policy/policy_features.hpp"
#include "host/policy/policy_spec.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"

namespace lrhost::cli {

std::optional<ShownPlan> show_memory_plan(const nlohmann::json& config, int64_t world_size,
                                          const std::vector<int64_t>& gpu_memory_bytes) {
  if (!config.is_object() || !config.contains("policy") || !config["policy"].is_object() ||
      !config["policy"].contains("type"))
    return std::nullopt;
  // The dataset as policy_training.lua finds it: dataset.root, else dataset.repo_id's local copy.
  std::string root;
  const auto text = [&](const char* key) -> std::string {
    if (!config.contains("dataset") || !config["dataset"].is_object()) return {};
    const auto& dataset = config["dataset"];
    return dataset.contains(key) && dataset[key].is_string() ? dataset[key].get<std::string>() : std::string();
  };
  root = text("root");
  if (root.empty() && !text("repo_id").empty()) root = io::resolve_lerobot_dataset(text("repo_id"), "dataset.repo_id");
  // The policy's config and features: the pretrained folder's config.json with the recipe's policy table
  // on top when fine-tuning (lr.config made that table from config.json and the command line; weights
  // not read), else the recipe's table over the dataset's features.
  nlohmann::json table;
  policy::PolicyFeatures features;
  const auto& policy_config = config["policy"];
  std::string config_file;  // the pretrained folder's config.json, named in errors
  // A mixture's features are its datasets' union (data/mixture/mixture_dataset.hpp), as training sees them.
  std::optional<data::MixtureDataset> mixture;
  if (config.contains("dataset"))
    if (auto spec = data::recipe_mixture_spec(config["dataset"]))
      mixture.emplace(std::move(*spec), data::DatasetOptions{.keys = std::vector<std::string>{}});
  const auto dataset_features = [&] {
    if (mixture) return policy::PolicyFeatures::from_dataset(mixture->meta().info);
    auto dataset = root.empty() ? data::default_dataset() : std::filesystem::path(root);
    return policy::PolicyFeatures::from_dataset(data::DatasetMeta::read(dataset).info);
  };
  const bool pretrained = policy_config.contains("pretrained_path") && policy_config["pretrained_path"].is_string() &&
                          !policy_config["pretrained_path"].get<std::string>().empty();
  // The recipe's LoRA (policy.peft), planned as training attaches it to the loaded policy.
  std::optional<policy::PeftSettings> peft;
  if (policy_config.contains(policy::kPeftKey))
    peft = policy::PeftSettings::read(policy_config[policy::kPeftKey], "policy.peft");
  if (peft && !pretrained) throw policy::lora_without_pretrained_error();
  if (pretrained) {
    // Features config.json leaves empty are the dataset's, as training takes them.
    const auto dir = policy::resolve_pretrained_dir(policy_config["pretrained_path"].get<std::string>());
    auto inputs = ckpt::build_inputs(dir, policy_config, dataset_features);
    config_file = (dir / ckpt::kConfigFile).string();
    table = std::move(inputs.config);
    features = std::move(inputs.features);
  } else {
    features = dataset_features();
    table = policy_config;
    if (table.contains("pretrained_path")) table.erase("pretrained_path");  // "" = none
  }
  // A policy too large to build only to count it is planned from its config (pi0/pi05 at full size).
  const auto* spec = table.contains("type") && table["type"].is_string()
                         ? policy::find_policy_spec(table["type"].get<std::string>())
                         : nullptr;
  // A config the policy type refuses names the pretrained config.json it came from.
  const auto from_config_file = [&](auto&& build) {
    try {
      return build();
    } catch (const util::Error& error) {
      if (config_file.empty()) throw;
      throw util::ConfigError(config_file + ": " + error.what(), error.hint());
    }
  };
  std::optional<policy::PlannedPolicy> planned;
  std::function<void(policy::Policy&)> adapt;  // the run's LoRA on a built policy
  if (peft)
    adapt = [&](policy::Policy& built) {
      policy::add_lora_adapters(built, *peft, policy_config["pretrained_path"].get<std::string>());
    };
  if (spec && spec->plan_without_building)
    planned = from_config_file([&] { return spec->plan_without_building(table, features, adapt); });
  if (planned && peft) policy::plan_lora_adapters(*planned, *peft);
  accel::MemoryPlan plan;
  if (planned) {
    plan = accel::make_memory_plan(*planned, config, world_size);
  } else {
    auto policy = from_config_file([&] { return policy::create_policy(table, features); });
    if (adapt) adapt(*policy);
    plan = accel::make_memory_plan(*policy, config, world_size);
    try {
      const bool checkpointing = table.contains("gradient_checkpointing") && table["gradient_checkpointing"] == true;
      plan.activation_bytes_per_sample =
          policy::measure_activations(*policy, {}, policy::activation_measure(checkpointing)).per_sample;
      if (checkpointing)
        plan.activation_note =
            "measured: training forward and backward on CPU at batch 1 and 2 in the policy's dtypes, at their "
            "peak (gradient checkpointing: the layer inputs kept plus one layer's recomputation)";
    } catch (const std::exception& error) {
      // The plan stands without it; say why the line is missing.
      spdlog::warn("show: activations per sample not measured: the policy's forward refused an example batch: {}",
                   error.what());
    }
  }
  plan.gpu_memory_bytes = gpu_memory_bytes;
  ShownPlan shown{accel::render_memory_plan(plan), accel::memory_plan_json(plan)};
  if (mixture) {
    // The passes the run's samples make over each dataset: steps x batch_size x ranks x accumulation.
    const auto number = [&](const nlohmann::json& table, const char* key, int64_t fallback) {
      return table.is_object() && table.contains(key) && table[key].is_number() ? table[key].get<int64_t>() : fallback;
    };
    const int64_t accumulation =
        config.contains("accelerator") ? number(config["accelerator"], "gradient_accumulation_steps", 1) : 1;
    const int64_t samples = number(config, "steps", 0) * number(config, "batch_size", 1) * world_size * accumulation;
    for (const std::string& line : data::mixture_report(*mixture, samples)) shown.text += line + "\n";
  }
  if (const char* file = std::getenv("LRHOST_PLAN_JSON"); file != nullptr && *file != 0)
    io::write_file_atomic(file, shown.json.dump(2));
  return shown;
}

nlohmann::ordered_json show_json_document(const nlohmann::json& config, const std::optional<ShownPlan>& plan) {
  nlohmann::ordered_json document;
  document["config"] = nlohmann::ordered_json::parse(config.dump());  // json -> ordered_json
  document["memory_plan"] = plan ? plan->json : nlohmann::ordered_json();
  return document;
}

StdoutToStderr::StdoutToStderr() {
  std::fflush(stdout);
  saved_ = ::dup(STDOUT_FILENO);
  if (saved_ >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);
}

StdoutToStderr::~StdoutToStderr() {
  if (saved_ < 0) return;
  std::fflush(stdout);
  ::dup2(saved_, STDOUT_FILENO);
  ::close(saved_);
}

}  // namespace lrhost::cli
