// Reading `dataset.mixture`; see mixture_spec.hpp.
#include "host/data/mixture/mixture_spec.hpp"

#include <fstream>
#include <set>

#include "host/config/config_reader.hpp"
#include "host/io/hf_cache.hpp"
#include "host/util/error.hpp"

namespace lrhost::data {
namespace fs = std::filesystem;

namespace {

nlohmann::json parse_json_text(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    throw util::ConfigError(what + " is not valid JSON: " + error.what(),
                            "give a list of datasets, e.g. '[{\"repo_id\": \"me/a\", \"weight\": 3}, "
                            "{\"repo_id\": \"me/b\"}]', or @file.json");
  }
}

// The entry list behind `mixture`, with what to call it in messages.
nlohmann::json entry_list(const nlohmann::json& mixture, const fs::path& base_dir, std::string& what) {
  what = "dataset.mixture";
  nlohmann::json list = mixture;
  if (mixture.is_string()) {
    const std::string text = mixture.get<std::string>();
    if (text.starts_with("@")) {
      fs::path file = text.substr(1);
      if (file.is_relative()) file = base_dir / file;
      std::ifstream in(file);
      if (!in) throw util::ConfigError("dataset.mixture: cannot read the mixture file " + file.string());
      what = file.string();
      list = parse_json_text(std::string(std::istreambuf_iterator<char>(in), {}), what);
    } else {
      list = parse_json_text(text, what);
    }
  }
  // An empty Lua table may arrive as an empty object.
  if (list.is_object() && list.empty()) return nlohmann::json::array();
  if (!list.is_array())
    throw util::ConfigError(what + ": expected a list of datasets ({repo_id = ... | root = ..., weight = ...}), got " +
                            std::string(list.type_name()));
  return list;
}

std::string default_name(const MixturePart& part) {
  std::string source = part.source;
  while (source.size() > 1 && source.back() == '/') source.pop_back();
  return fs::path(source).filename().string();
}

}  // namespace

std::string weighting_name(MixtureWeighting weighting) {
  switch (weighting) {
    case MixtureWeighting::frames:
      return "frames";
    case MixtureWeighting::given:
      return "given";
    case MixtureWeighting::balanced:
      return "balanced";
  }
  return "?";
}

MixtureSpec mixture_spec_from_json(const nlohmann::json& mixture, const std::string& weighting,
                                   const std::string& stats, bool mixed_fps, const fs::path& base_dir) {
  std::string what;
  nlohmann::json list = entry_list(mixture, base_dir, what);
  MixtureSpec spec;
  spec.mixed_fps = mixed_fps;
  bool any_weight = false;
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = what + "[" + std::to_string(i + 1) + "]";
    if (!list[i].is_object())
      throw util::ConfigError(where + ": expected a table {repo_id = ... | root = ..., weight = ...}, got " +
                              std::string(list[i].type_name()));
    const nlohmann::json& entry = list[i];
    config::ConfigReader reader(entry, where);
    // Read below without defaults: absent and given must differ.
    auto given = [&](const char* key) -> const nlohmann::json* {
      reader.allow(key);
      return entry.contains(key) ? &entry.at(key) : nullptr;
    };
    MixturePart part;
    const std::string repo_id = reader.string("repo_id", "");
    const std::string root = reader.string("root", "");
    if (repo_id.empty() == root.empty())
      throw util::ConfigError(where +
                              ": give exactly one of 'repo_id' (a LeRobot dataset in the local cache) and "
                              "'root' (a dataset folder)");
    if (!root.empty()) {
      part.source = root;
      part.root = fs::path(root).is_relative() ? base_dir / root : fs::path(root);
      if (!fs::exists(part.root / "meta" / "info.json"))
        throw util::ConfigError(where + ": root '" + root + "' is not a LeRobot dataset (no meta/info.json in " +
                                part.root.string() + ")");
    } else {
      part.source = repo_id;
      part.root = io::resolve_lerobot_dataset(repo_id, where + ".repo_id");
    }
    if (const nlohmann::json* weight = given("weight")) {
      if (!weight->is_number() || !(weight->get<double>() > 0))
        throw util::ConfigError(where + " (" + part.source + "): 'weight' must be a number > 0, got " + weight->dump());
      part.weight = weight->get<double>();
      any_weight = true;
    }
    if (const nlohmann::json* renames = given("rename_map"); renames && !(renames->is_array() && renames->empty())) {
      if (!renames->is_object())
        throw util::ConfigError(where + " (" + part.source +
                                "): 'rename_map' must be a table {dataset_key = policy_key}");
      for (const auto& [from, to] : renames->items()) {
        if (!to.is_string())
          throw util::ConfigError(where + " (" + part.source + "): rename_map['" + from + "'] must be a string");
        part.rename_map[from] = to.get<std::string>();
      }
    }
    if (const nlohmann::json* episodes = given("episodes")) {
      if (!(episodes->is_array() || (episodes->is_object() && episodes->empty())))
        throw util::ConfigError(where + " (" + part.source + "): 'episodes' must be a list of episode indices");
      std::vector<int64_t> chosen;
      for (const auto& e : *episodes) {
        if (!e.is_number_integer() || e.get<int64_t>() < 0)
          throw util::ConfigError(where + " (" + part.source + "): 'episodes' must hold episode indices >= 0, got " +
                                  e.dump());
        chosen.push_back(e.get<int64_t>());
      }
      if (!chosen.empty()) part.episodes = chosen;
    }
    part.name = reader.string("name", "");
    if (part.name.empty()) part.name = default_name(part);
    if (!names.insert(part.name).second)
      throw util::ConfigError(where + ": the name '" + part.name + "' is taken by an earlier dataset",
                              "give each dataset its own name = \"...\" (metrics and stats are kept by name)");
    reader.reject_unknown();
    spec.parts.push_back(std::move(part));
  }
  if (spec.parts.empty()) throw util::ConfigError(what + " is empty: list at least one dataset");
  if (weighting.empty()) {
    spec.weighting = any_weight ? MixtureWeighting::given : MixtureWeighting::frames;
  } else if (weighting == "frames") {
    spec.weighting = MixtureWeighting::frames;
  } else if (weighting == "given") {
    spec.weighting = MixtureWeighting::given;
  } else if (weighting == "balanced") {
    spec.weighting = MixtureWeighting::balanced;
  } else {
    throw util::ConfigError("dataset.weighting = '" + weighting + "': expected \"frames\", \"given\" or \"balanced\"");
  }
  if (spec.weighting == MixtureWeighting::frames && any_weight)
    throw util::ConfigError("dataset.weighting = \"frames\" samples by frame count, but " + what +
                            " gives weights: drop them, or set dataset.weighting=\"given\" or \"balanced\"");
  if (stats == "pooled") {
    spec.stats = MixtureStats::pooled;
  } else if (stats == "per_dataset") {
    spec.stats = MixtureStats::per_dataset;
    // The name becomes part of the checkpoint's file names (policy_preprocessor_<name>.json).
    for (const MixturePart& part : spec.parts)
      if (part.name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
              std::string::npos ||
          part.name.front() == '.')
        throw util::ConfigError(
            "dataset.stats = \"per_dataset\" saves each dataset's stats in files named after it, "
            "but the name '" +
                part.name + "' (" + part.source + ") has characters other than letters, digits, '.', '_' and '-'",
            "give it name = \"...\" in dataset.mixture");
  } else {
    throw util::ConfigError("dataset.stats = '" + stats + "': expected \"pooled\" or \"per_dataset\"");
  }
  return spec;
}

std::optional<MixtureSpec> recipe_mixture_spec(const nlohmann::json& dataset) {
  if (!dataset.is_object() || !dataset.contains("mixture")) return std::nullopt;
  const nlohmann::json& mixture = dataset.at("mixture");
  if (mixture.is_null() || mixture.empty() || (mixture.is_string() && mixture.get<std::string>().empty()))
    return std::nullopt;
  auto text = [&](const char* key, const char* fallback) {
    return dataset.contains(key) && dataset[key].is_string() ? dataset[key].get<std::string>() : std::string(fallback);
  };
  const bool mixed_fps = dataset.contains("mixed_fps") && dataset["mixed_fps"] == true;
  return mixture_spec_from_json(mixture, text("weighting", ""), text("stats", "pooled"), mixed_fps);
}

}  // namespace lrhost::data
