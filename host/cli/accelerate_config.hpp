// accelerate's config files (`accelerate launch --config_file fsdp.yaml`, or the default config that
// `accelerate config` saves) read for `lrhost lerobot-train`: every key of accelerate 1.15's
// ClusterConfig schema (YAML, or JSON for a .json file) becomes launch options and lrhost overrides,
// is refused with the reason, or is listed as having no effect and why. The result carries one printed
// line per key, so nothing in the file is dropped silently. Pure: a file and the run's context in, a
// mapping out; lerobot_train.cpp applies it.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lrhost::policy {
struct PolicySpec;
}

namespace lrhost::cli {

struct AccelerateConfigContext {
  // The run's policy (LeRobot's class names of its FSDP units, whether it has gradient checkpointing);
  // null when unknown.
  const policy::PolicySpec* policy = nullptr;
  // The lrhost settings typed beside the file, which win over it: "nproc" and "device" (launch
  // options), or an override key ("accelerator.mixed_precision"), each with the text typed.
  std::map<std::string, std::string> typed;
};

struct AccelerateConfigMapping {
  std::filesystem::path file;
  std::optional<int> num_processes;                 // lrhost's --nproc
  std::optional<std::string> device;                // lrhost's --device ("cpu")
  std::optional<std::string> cuda_visible_devices;  // gpu_ids other than "all"
  std::vector<std::string> overrides;               // lrhost key=value for the recipe
  std::vector<std::string> lines;                   // "key: value -> what lrhost does", one per key
};

// Reads `file` (YAML; JSON when it ends in .json) and maps it key by key. ConfigError naming the file
// and key for an unknown key, a bad value or a setting lrhost cannot honour; IoError for a missing or
// unparsable file.
AccelerateConfigMapping map_accelerate_config(const std::filesystem::path& file,
                                              const AccelerateConfigContext& context);

// accelerate's gpu_ids (the config file's key, or --gpu_ids): "all" is every visible GPU (nullopt);
// distinct GPU indices "0,1" become that CUDA_VISIBLE_DEVICES list. ConfigError "<where>: ..." for
// anything else.
std::optional<std::string> cuda_visible_devices_of(const std::string& gpu_ids, const std::string& where);

// Where accelerate 1.15 keeps its saved default config (commands/config/config_args.py):
// $HF_HOME/accelerate/default_config.yaml, else $XDG_CACHE_HOME/huggingface/accelerate/..., else
// ~/.cache/huggingface/accelerate/...; the path only when that file exists. `env` looks a variable up.
std::optional<std::filesystem::path> default_accelerate_config(
    const std::function<std::optional<std::string>(const std::string&)>& env);

}  // namespace lrhost::cli
