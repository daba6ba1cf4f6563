// Lua binding of datasets: lr.dataset.lerobot{root =, delta_timestamps =, episodes =, tolerance_s =},
// lr.dataset.mixture{mixture =, weighting =, stats =, mixed_fps =, and the same options} (several
// datasets as one: host/data/mixture),
// lr.dataset.synth{out =, episodes =, ...}, lr.dataset.from_repo_id(id) (the local folder LeRobot
// keeps dataset `user/name` in; never a download), lr.default_dataset(), and the Dataset methods len(),
// get(i) (0-based, a table of tensors: for inspection and tests, training uses a loader),
// column(key), meta(), stats(), task(i), normalizer(mapping [, {use_imagenet_stats =}]),
// loader(options) (single process; acc:loader(ds, options) shards across ranks), and for a mixture
// mixture(), mixture_report([samples]) and sum_by_dataset(index, values). A Normalizer has
// normalize(batch) and unnormalize(key, tensor).
#include "bindings/wrap_dataset.hpp"
#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/wrap_tensor.hpp"
#include "host/config/config_reader.hpp"
#include "host/data/batch_normalizer.hpp"
#include "host/data/data_options.hpp"
#include "host/data/mixture/mixture_dataset.hpp"
#include "host/data/mixture/mixture_report.hpp"
#include "host/data/synthetic_push.hpp"
#include "host/io/hf_cache.hpp"

namespace lrhost::bindings {

template <>
struct LxTraits<data::BatchNormalizer> {
  static constexpr LxType type{"Normalizer", "lrhost.Normalizer"};
};

namespace {
data::FrameSource& check_dataset(lua_State* L, int index) {
  return lx_check<data::FrameSource>(L, index);
}

int w_lerobot(lua_State* L) {
  return lx_guard(L, "lr.dataset.lerobot", [&] {
    lx_check_table(L, 1, "table with 'root'");
    auto request = data::dataset_request_from_json(lx_to_json(L, 1, 1, "dataset"));
    lx_push(L,
            std::shared_ptr<data::FrameSource>(std::make_shared<data::LeRobotDataset>(request.root, request.options)));
    return 1;
  });
}

int w_mixture(lua_State* L) {
  return lx_guard(L, "lr.dataset.mixture", [&] {
    lx_check_table(L, 1, "table with 'mixture'");
    auto request = data::mixture_request_from_json(lx_to_json(L, 1, 1, "dataset"));
    lx_push(L, std::shared_ptr<data::FrameSource>(
                   std::make_shared<data::MixtureDataset>(std::move(request.spec), std::move(request.options))));
    return 1;
  });
}

int w_synth(lua_State* L) {
  return lx_guard(L, "lr.dataset.synth", [&] {
    lx_check_table(L, 1, "table with 'out'");
    nlohmann::json table = lx_to_json(L, 1, 1, "synth");
    config::ConfigReader reader(table, "lr.dataset.synth");
    data::SyntheticPushOptions options;
    std::string out = reader.string("out", "");
    if (out.empty()) throw LxArgError(1, "'out' (the new dataset's folder) is required");
    options.episodes = static_cast<int>(reader.positive_integer("episodes", options.episodes));
    options.fps = static_cast<int>(reader.positive_integer("fps", options.fps));
    options.image_size = static_cast<int>(reader.positive_integer("image_size", options.image_size));
    options.max_episode_length = static_cast<int>(reader.positive_integer("max_length", options.max_episode_length));
    options.seed = static_cast<uint64_t>(reader.integer("seed", 0));
    options.cameras_as_images = reader.boolean("images", false);
    options.second_camera = reader.boolean("wrist", false);
    options.extra_action_dims = static_cast<int>(reader.integer("extra_action_dims", 0));
    options.video.codec = reader.string("vcodec", options.video.codec);
    reader.reject_unknown();
    lua_pushnumber(L, static_cast<double>(data::write_synthetic_push(out, options)));
    return 1;
  });
}

int w_from_repo_id(lua_State* L) {
  return lx_guard(L, "lr.dataset.from_repo_id", [&] {
    std::string repo_id = lx_check_string(L, 1);
    std::string what = lua_isnoneornil(L, 2) ? "dataset.repo_id" : lx_check_string(L, 2);
    lua_pushstring(L, io::resolve_lerobot_dataset(repo_id, what).string().c_str());
    return 1;
  });
}

int w_default_dataset(lua_State* L) {
  return lx_guard(L, "lr.default_dataset", [&] {
    lua_pushstring(L, data::default_dataset().string().c_str());
    return 1;
  });
}

int w_len(lua_State* L) {
  return lx_guard(L, "Dataset:len", [&] {
    lua_pushnumber(L, static_cast<double>(check_dataset(L, 1).size()));
    return 1;
  });
}

int w_get(lua_State* L) {
  return lx_guard(L, "Dataset:get", [&] {
    auto& dataset = check_dataset(L, 1);
    int64_t index = lx_check_integer(L, 2);
    if (index < 0 || index >= dataset.size())
      throw LxArgError(2, "index " + std::to_string(index) + " is outside 0.." + std::to_string(dataset.size() - 1));
    data::ReadContext context(2);
    push_batch(L, dataset.get(index, context));
    return 1;
  });
}

int w_column(lua_State* L) {
  return lx_guard(L, "Dataset:column", [&] {
    push_tensor(L, check_dataset(L, 1).column(lx_check_string(L, 2)));
    return 1;
  });
}

int w_task(lua_State* L) {
  return lx_guard(L, "Dataset:task", [&] {
    lua_pushstring(L, check_dataset(L, 1).meta().task(lx_check_integer(L, 2)).c_str());
    return 1;
  });
}

int w_meta(lua_State* L) {
  return lx_guard(L, "Dataset:meta", [&] {
    auto& dataset = check_dataset(L, 1);
    const auto& meta = dataset.meta();
    nlohmann::json features = nlohmann::json::object();
    for (const auto& feature : meta.info.features) {
      const char* kinds[] = {"numeric", "video", "image", "text"};
      features[feature.key] = {
          {"dtype", feature.dtype}, {"shape", feature.item_shape()}, {"kind", kinds[static_cast<int>(feature.kind)]}};
    }
    nlohmann::json table = {{"root", meta.root.string()},
                            {"codebase_version", meta.info.codebase_version},
                            {"fps", meta.info.fps},
                            {"total_episodes", meta.info.total_episodes},
                            {"total_frames", meta.info.total_frames},
                            {"num_frames", dataset.size()},
                            {"episodes", dataset.episode_indices()},
                            {"features", features},
                            {"camera_keys", meta.info.camera_keys()},
                            {"video_keys", meta.info.keys_of(data::FeatureKind::Video)},
                            {"tasks", meta.tasks},
                            {"robot_type", meta.info.robot_type.value_or("")}};
    lx_push_json(L, table);
    return 1;
  });
}

// Dataset:mixture() -> nil for one dataset; for a mixture {weighting =, stats =, datasets = {{name =,
// source =, root =, episodes =, frames =, fps =, share =, weight =, missing_cameras =}, ...},
// padded = {key = width}} (datasets in order, frames and episodes of those selected).
int w_mixture_info(lua_State* L) {
  return lx_guard(L, "Dataset:mixture", [&] {
    const auto* mixture = dynamic_cast<const data::MixtureDataset*>(&check_dataset(L, 1));
    if (!mixture) {
      lua_pushnil(L);
      return 1;
    }
    nlohmann::json datasets = nlohmann::json::array();
    for (const data::MixtureMember& member : mixture->members()) {
      nlohmann::json entry = {{"name", member.part.name},
                              {"source", member.part.source},
                              {"root", member.part.root.string()},
                              {"episodes", member.dataset ? member.dataset->episode_indices().size() : 0},
                              {"frames", member.dataset ? member.dataset->size() : 0},
                              {"fps", member.dataset ? member.dataset->meta().info.fps : 0},
                              {"share", member.share},
                              {"missing_cameras", member.missing_cameras}};
      if (member.part.weight) entry["weight"] = *member.part.weight;
      datasets.push_back(entry);
    }
    nlohmann::json padded = nlohmann::json::object();
    for (const auto& [key, width] : mixture->padded_features()) padded[key] = width;
    lx_push_json(L, {{"weighting", data::weighting_name(mixture->spec().weighting)},
                     {"stats", "pooled"},
                     {"datasets", datasets},
                     {"padded", padded}});
    return 1;
  });
}

// Dataset:mixture_report([samples]) -> lines describing a mixture (data/mixture/mixture_report.hpp);
// ConfigError for a single dataset.
int w_mixture_report(lua_State* L) {
  return lx_guard(L, "Dataset:mixture_report", [&] {
    const auto* mixture = dynamic_cast<const data::MixtureDataset*>(&check_dataset(L, 1));
    if (!mixture) throw LxArgError(1, "a mixture (lr.dataset.mixture), got a single dataset");
    std::optional<int64_t> samples;
    if (!lua_isnoneornil(L, 2)) samples = lx_check_integer(L, 2);
    lx_push_json(L, data::mixture_report(*mixture, samples));
    return 1;
  });
}

// Dataset:sum_by_dataset(index, values) -> sums, counts (float64 [datasets]): a mixture's per-dataset
// sums of a batch's per-sample values, by each sample's frame index.
int w_sum_by_dataset(lua_State* L) {
  return lx_guard(L, "Dataset:sum_by_dataset", [&] {
    const auto* mixture = dynamic_cast<const data::MixtureDataset*>(&check_dataset(L, 1));
    if (!mixture) throw LxArgError(1, "a mixture (lr.dataset.mixture), got a single dataset");
    auto [sums, counts] = mixture->sum_by_member(check_tensor(L, 2), check_tensor(L, 3));
    push_tensor(L, sums);
    push_tensor(L, counts);
    return 2;
  });
}

int w_stats(lua_State* L) {
  return lx_guard(L, "Dataset:stats", [&] {
    const auto& stats = check_dataset(L, 1).meta().stats;
    if (!stats) {
      lua_pushnil(L);
      return 1;
    }
    lua_newtable(L);
    for (const auto& [key, feature_stats] : *stats) {
      lua_newtable(L);
      for (const std::string& name : feature_stats.names()) {
        push_tensor(L, feature_stats.get(name));
        lua_setfield(L, -2, name.c_str());
      }
      lua_setfield(L, -2, key.c_str());
    }
    return 1;
  });
}

int w_normalizer(lua_State* L) {
  return lx_guard(L, "Dataset:normalizer", [&] {
    auto& dataset = check_dataset(L, 1);
    lx_check_table(L, 2, "mapping {VISUAL =, STATE =, ACTION = mode}");
    std::map<std::string, std::string> mapping =
        lx_to_json(L, 2, 2, "mapping").get<std::map<std::string, std::string>>();
    bool imagenet = true;
    if (!lua_isnoneornil(L, 3)) {
      const auto options = lx_to_json(L, 3, 3, "options");
      config::ConfigReader reader(options, "Dataset:normalizer options");
      imagenet = reader.boolean("use_imagenet_stats", true);
      reader.reject_unknown();
    }
    if (!dataset.meta().stats)
      throw util::DataError(dataset.meta().root.string() + " has no meta/stats.json, so it cannot be normalized");
    lx_push(L, std::make_shared<data::BatchNormalizer>(dataset.meta().info, *dataset.meta().stats, mapping, imagenet));
    return 1;
  });
}

int w_dataset_loader(lua_State* L) {
  return lx_guard(L, "Dataset:loader", [&] {
    push_loader(L, lx_check_shared<data::FrameSource>(L, 1), 2, 0, 1, c10::Device(c10::kCPU));
    return 1;
  });
}

int w_normalize(lua_State* L) {
  return lx_guard(L, "Normalizer:normalize", [&] {
    auto& normalizer = lx_check<data::BatchNormalizer>(L, 1);
    auto batch = check_batch(L, 2);
    normalizer.normalize(batch);
    push_batch(L, std::move(batch));
    return 1;
  });
}

int w_unnormalize(lua_State* L) {
  return lx_guard(L, "Normalizer:unnormalize", [&] {
    auto& normalizer = lx_check<data::BatchNormalizer>(L, 1);
    push_tensor(L, normalizer.unnormalize(lx_check_string(L, 2), check_tensor(L, 3)));
    return 1;
  });
}

}  // namespace

void open_dataset(lua_State* L, int module) {
  const luaL_Reg methods[] = {{"len", w_len},
                              {"get", w_get},
                              {"column", w_column},
                              {"task", w_task},
                              {"meta", w_meta},
                              {"stats", w_stats},
                              {"mixture", w_mixture_info},
                              {"mixture_report", w_mixture_report},
                              {"sum_by_dataset", w_sum_by_dataset},
                              {"normalizer", w_normalizer},
                              {"loader", w_dataset_loader},
                              {nullptr, nullptr}};
  const luaL_Reg metamethods[] = {{"__len", w_len}, {nullptr, nullptr}};
  lx_register_type(L, LxTraits<data::FrameSource>::type, methods, nullptr, metamethods);
  const luaL_Reg normalizer_methods[] = {
      {"normalize", w_normalize}, {"unnormalize", w_unnormalize}, {nullptr, nullptr}};
  lx_register_type(L, LxTraits<data::BatchNormalizer>::type, normalizer_methods);

  lua_newtable(L);
  const luaL_Reg functions[] = {{"lerobot", w_lerobot},
                                {"mixture", w_mixture},
                                {"synth", w_synth},
                                {"from_repo_id", w_from_repo_id},
                                {nullptr, nullptr}};
  lx_set_functions(L, lua_gettop(L), functions);
  lua_setfield(L, module, "dataset");
  lua_pushcfunction(L, w_default_dataset);
  lua_setfield(L, module, "default_dataset");
}

}  // namespace lrhost::bindings
