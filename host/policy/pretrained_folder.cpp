// Reading a pretrained policy folder's config; see pretrained_folder.hpp.
#include "host/policy/pretrained_folder.hpp"

#include "host/io/atomic_dir.hpp"
#include "host/io/hf_cache.hpp"
#include "host/policy/registry.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy {
namespace fs = std::filesystem;

fs::path resolve_pretrained_dir(const fs::path& path_or_id) {
  std::error_code ec;
  const fs::path dir = !fs::is_directory(path_or_id, ec) && io::looks_like_hub_id(path_or_id.string())
                           ? io::resolve_model_dir(path_or_id.string(), "pretrained policy")
                           : path_or_id;
  if (!fs::is_directory(dir, ec))
    throw util::IoError(dir.string() + ": no such folder",
                        "give a folder written by save_pretrained (config.json, "
                        "model.safetensors)");
  return dir;
}

nlohmann::ordered_json read_config_json(const fs::path& dir) {
  const fs::path file = dir / kConfigFile;
  auto config = io::read_json_file(file, "the file is corrupt or truncated; save the policy again");
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string())
    throw util::DataError(file.string() + ": expected a policy config object with a string \"type\"");
  return config;
}

nlohmann::ordered_json read_policy_config(const fs::path& dir) {
  auto config = read_config_json(dir);
  const auto* spec = find_policy_spec(config["type"].get<std::string>());
  if (spec && spec->read_pretrained_extras) spec->read_pretrained_extras(dir, config);
  return config;
}

}  // namespace lrhost::policy
