// Strict parsing of the data objects' recipe options; see data_options.hpp.
#include "host/data/data_options.hpp"

#include <spdlog/spdlog.h>

#include "host/config/config_reader.hpp"
#include "host/util/error.hpp"

namespace lrhost::data {
using nlohmann::json;

namespace {
// An empty Lua table arrives as an empty JSON array; it means "no options".
json as_object(const json& table) {
  return table.is_array() && table.empty() ? json::object() : table;
}
}  // namespace

namespace {
// The options every dataset takes: tolerance_s, delta_timestamps, keys, episodes.
DatasetOptions dataset_options(config::ConfigReader& reader, const json& table, const std::string& where) {
  DatasetOptions options;
  options.tolerance_s = reader.number("tolerance_s", 1e-4);
  reader.allow("delta_timestamps");
  if (table.contains("delta_timestamps") && !table["delta_timestamps"].is_null()) {
    const json& deltas = table["delta_timestamps"];
    if (!deltas.is_object())
      throw util::ConfigError(where + ": delta_timestamps must be a table {key = {seconds, ...}}");
    for (const auto& [key, list] : deltas.items()) {
      if (!list.is_array()) throw util::ConfigError("delta_timestamps['" + key + "'] must be a list of seconds");
      std::vector<double> seconds;
      for (const json& value : list) {
        if (!value.is_number())
          throw util::ConfigError("delta_timestamps['" + key + "'] must hold numbers, got " + value.dump());
        seconds.push_back(value.get<double>());
      }
      options.delta_timestamps[key] = seconds;
    }
  }
  reader.allow("keys");
  if (table.contains("keys") && !table["keys"].is_null()) {
    if (!table["keys"].is_array()) throw util::ConfigError(where + ": keys must be a list of feature names");
    options.keys.emplace();
    for (const json& key : table["keys"]) {
      if (!key.is_string()) throw util::ConfigError(where + ": keys must hold feature names, got " + key.dump());
      options.keys->push_back(key.get<std::string>());
    }
  }
  if (table.contains("episodes") && !table["episodes"].is_null())
    options.episodes = reader.integer_list("episodes", {});
  else
    reader.allow("episodes");
  return options;
}
}  // namespace

DatasetRequest dataset_request_from_json(const json& options) {
  const json table = as_object(options);
  config::ConfigReader reader(table, "lr.dataset.lerobot");
  DatasetRequest request;
  std::string root = reader.string("root", "");
  if (root.empty())
    throw util::ConfigError("lr.dataset.lerobot: 'root' is required (the folder holding meta/info.json)",
                            "lr.default_dataset() gives the built-in dataset's folder");
  request.root = root;
  request.options = dataset_options(reader, table, "lr.dataset.lerobot");
  reader.reject_unknown();
  return request;
}

MixtureRequest mixture_request_from_json(const json& options) {
  const json table = as_object(options);
  config::ConfigReader reader(table, "lr.dataset.mixture");
  if (!table.contains("mixture"))
    throw util::ConfigError(
        "lr.dataset.mixture: 'mixture' is required (a list of {repo_id = | root =, weight =}, "
        "its JSON text, or @file.json)");
  reader.allow("mixture");
  const std::string weighting = reader.string("weighting", "");
  const std::string stats = reader.string("stats", "pooled");
  const bool mixed_fps = reader.boolean("mixed_fps", false);
  DatasetOptions common = dataset_options(reader, table, "lr.dataset.mixture");
  reader.reject_unknown();
  return {mixture_spec_from_json(table.at("mixture"), weighting, stats, mixed_fps), std::move(common)};
}

ImageTransforms image_transforms_from_json(const json& options) {
  const json table = as_object(options);
  config::ConfigReader reader(table, "image_transforms");
  ImageTransformsConfig config = ImageTransformsConfig::lerobot_defaults();
  config.enable = reader.boolean("enable", config.enable);
  config.max_num_transforms = static_cast<int>(reader.integer("max_num_transforms", config.max_num_transforms));
  config.random_order = reader.boolean("random_order", config.random_order);
  reader.allow("tfs");
  if (table.contains("tfs")) {
    if (!table["tfs"].is_object()) throw util::ConfigError("image_transforms.tfs must be a table of named transforms");
    config.tfs.clear();
    config.order.clear();
    for (const auto& [name, spec] : table["tfs"].items()) {
      config::ConfigReader entry(spec, "image_transforms.tfs." + name);
      ImageTransformSpec transform;
      transform.type = entry.string("type", "");
      transform.weight = entry.number("weight", 1.0);
      entry.allow("kwargs");
      if (spec.contains("kwargs")) {
        for (const auto& [key, range] : spec["kwargs"].items()) {
          if (range.is_array() && range.size() == 2 && range[0].is_number() && range[1].is_number())
            transform.ranges[key] = {range[0].get<double>(), range[1].get<double>()};
          else
            throw util::ConfigError("image_transforms.tfs." + name + ".kwargs." + key + " must be {lo, hi}, got " +
                                    range.dump());
        }
      }
      entry.reject_unknown();
      config.tfs[name] = transform;
    }
    // A Lua table has no order (the JSON form lists names alphabetically), but the order decides
    // which transforms a draw picks and in which order they apply. LeRobot's names keep LeRobot's
    // listing order; other names follow alphabetically (ImageTransformsConfig::order).
    for (const auto& name : ImageTransformsConfig::lerobot_defaults().order)
      if (config.tfs.count(name)) config.order.push_back(name);
  }
  CropResizeConfig crop;
  auto size_pair = [&](const char* key) -> std::optional<std::pair<int, int>> {
    reader.allow(key);
    if (!table.contains(key)) return std::nullopt;
    const json& value = table[key];
    if (!value.is_array() || value.size() != 2 || !value[0].is_number_integer() || !value[1].is_number_integer())
      throw util::ConfigError(std::string("image_transforms.") + key + " must be {height, width}, got " + value.dump());
    return std::pair<int, int>{value[0].get<int>(), value[1].get<int>()};
  };
  crop.crop = size_pair("crop");
  crop.resize = size_pair("resize");
  crop.random_crop = reader.boolean("random_crop", false);
  reader.reject_unknown();
  return ImageTransforms(config, crop);
}

LoaderRequest loader_request_from_json(const json& options, int rank, int world_size, c10::Device device) {
  const json table = as_object(options);
  config::ConfigReader reader(table, "loader");
  LoaderRequest request;
  SamplerOptions& sampler = request.options.sampler;
  sampler.batch_size = reader.positive_integer("batch_size", 8);
  sampler.shuffle = reader.boolean("shuffle", true);
  int64_t seed = reader.integer("seed", 0);
  if (seed < 0) throw util::ConfigError("loader: seed must be >= 0, got " + std::to_string(seed));
  sampler.seed = static_cast<uint64_t>(seed);
  sampler.drop_first = reader.integer("drop_n_first_frames", 0);
  sampler.drop_last = reader.integer("drop_n_last_frames", 0);
  sampler.rank = rank;
  sampler.world_size = world_size;
  request.options.num_workers = static_cast<int>(reader.positive_integer("num_workers", 2));
  request.options.prefetch = static_cast<int>(reader.positive_integer("prefetch", 4));
  if (auto files = reader.optional_integer("video_cache")) {
    if (*files < 1) throw util::ConfigError("loader option 'video_cache' must be >= 1, got " + std::to_string(*files));
    request.options.video_cache_size = static_cast<std::size_t>(*files);
  }
  request.options.device = device;
  reader.allow("image_transforms");
  if (table.contains("image_transforms"))
    request.options.image_transforms = image_transforms_from_json(table["image_transforms"]);
  reader.allow("state");
  if (table.contains("state") && !table["state"].is_null())
    request.start = loader_position_from_json(table["state"], sampler, "loader.state");
  reader.reject_unknown();
  return request;
}

SamplerPosition loader_position_from_json(const json& saved, const SamplerOptions& sampler, const std::string& what) {
  config::ConfigReader state(saved, what);
  SamplerPosition position;
  position.epoch = state.integer("epoch", 0);
  position.start_index = state.integer("start_index", 0);
  int64_t saved_batch = state.integer("batch_size", sampler.batch_size);
  int64_t saved_world = state.integer("world_size", sampler.world_size);
  if (saved_batch != sampler.batch_size || saved_world != sampler.world_size)
    spdlog::warn(
        "loader: resuming with batch_size {} x {} ranks, but the saved position came from batch_size {} x {} "
        "ranks; the run continues after the same samples, but batches are no longer identical "
        "(not sample-exact)",
        sampler.batch_size, sampler.world_size, saved_batch, saved_world);
  state.reject_unknown();
  return position;
}

json loader_state_to_json(const SamplerPosition& position, const SamplerOptions& sampler) {
  return {{"epoch", position.epoch},
          {"start_index", position.start_index},
          {"batch_size", sampler.batch_size},
          {"world_size", sampler.world_size}};
}

}  // namespace lrhost::data
