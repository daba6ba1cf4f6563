// Recipe options of the data objects, read from the JSON form of a Lua table with strict key and
// type checks (config::ConfigReader): lr.dataset.lerobot{...}, acc:loader(ds, {...}) and the
// image_transforms block. Keeping this here keeps bindings/ a pure translation layer.
#pragma once
#include <c10/core/Device.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "host/data/batch_loader.hpp"
#include "host/data/lerobot_dataset.hpp"
#include "host/data/mixture/mixture_spec.hpp"

namespace lrhost::data {

struct DatasetRequest {
  std::filesystem::path root;
  DatasetOptions options;
};

// { root =, delta_timestamps = {key = {seconds...}}, episodes = {...}, keys = {...}, tolerance_s = }
DatasetRequest dataset_request_from_json(const nlohmann::json& table);

// { mixture = {...} | "[json]" | "@file.json", weighting = "", stats = "pooled", mixed_fps = false, and
// the options above } (episodes in the mixture's numbering, keys and windows in the policy's names).
struct MixtureRequest {
  MixtureSpec spec;
  DatasetOptions options;
};
MixtureRequest mixture_request_from_json(const nlohmann::json& table);

// { batch_size =, shuffle =, seed =, num_workers =, prefetch =, drop_n_first_frames =,
//   drop_n_last_frames =, video_cache =, image_transforms = {...}, state = {epoch =, start_index =,
//   batch_size =, world_size =} }. Rank, world size and device come from the accelerator.
struct LoaderRequest {
  LoaderOptions options;
  SamplerPosition start;
};
LoaderRequest loader_request_from_json(const nlohmann::json& table, int rank, int world_size, c10::Device device);

// LeRobot's ImageTransformsConfig fields: enable, max_num_transforms, random_order, tfs = { name =
// {type =, weight =, kwargs = {key = {lo, hi}}} } (defaults: LeRobot's), plus crop/resize.
ImageTransforms image_transforms_from_json(const nlohmann::json& table);

// The loader state saved in checkpoints; with a different batch size or rank count the position is
// kept (samples consumed) but no longer sample-exact, which is logged as a warning.
nlohmann::json loader_state_to_json(const SamplerPosition& position, const SamplerOptions& sampler);
// The position in a saved loader state ({epoch =, start_index =, batch_size =, world_size =}) for a
// loader with `sampler`'s options; ConfigError naming `what` for unknown or mistyped fields.
SamplerPosition loader_position_from_json(const nlohmann::json& state, const SamplerOptions& sampler,
                                          const std::string& what);

}  // namespace lrhost::data
