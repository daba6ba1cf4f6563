// Lua binding of policies:
//   lr.policy.new(cfg [, features | Dataset [, {use_imagenet_stats = true, normalization_mapping =}]])
//     builds one from the registry; given a Dataset, its processors are built from the dataset's
//     stats (cameras get ImageNet mean/std unless use_imagenet_stats = false), as LeRobot's
//     make_pre_post_processors; normalization_mapping ({STATE = "MEAN_STD", ...}) replaces the
//     policy's own mapping (mlp has none).
//   lr.policy.load(dir [, {strict = true, rename_map = {[dataset key] = policy key}, config = cfg.policy}])
//     reads a LeRobot pretrained folder (config.json, model.safetensors, processors), with `config`'s
//     fields on top of config.json (fine-tuning with other settings); rename_map goes into the
//     preprocessor's rename step (LeRobot's --rename_map). file_backed = true: the weights are never
//     held whole for loading (ckpt::WeightLoading::file_backed; FSDP then reads only its rows).
//     A third argument (features | Dataset) fills the input_features / output_features that
//     config.json leaves empty, as LeRobot's make_policy takes them from the dataset.
//   lr.policy.types()
// Methods: forward(batch), select_action(batch), predict_action_chunk(batch), reset(),
// preprocess(batch [, tasks]) -> normalized batch (language policies: tokens from task_index via the
// task table, or from the task strings given), set_tasks(Dataset | {task, ...}) (the task table),
// use_dataset(Dataset [, {use_imagenet_stats =}]) (fine-tuning: the dataset's stats and tasks in the processors),
// prepare_training{cache_dir =, dataset =, augmentation =} (before acc:prepare), training_metrics()
// -> {name = number} (the policy's own figures for the log), training_flops_per_sample() -> number or
// nil (the step line's tflops and mfu), needs_task(), postprocess(action) -> unnormalized action,
// save_pretrained(dir), state_dict() -> {name = Tensor}, weight_table() (ordered rows: name, shape,
// dtype, numel, parameter, trainable), parameters(), named_parameters(),
// param_groups(), optimizer_preset(), scheduler_preset(), delta_indices(), delta_timestamps(fps),
// features(), normalization_mapping(), has_processors(), train(), eval(), is_training(), to(device),
// num_parameters(), config(), type_name().
#include <spdlog/spdlog.h>

#include "bindings/engine_context.hpp"
#include "bindings/json_convert.hpp"
#include "bindings/module.hpp"
#include "bindings/wrap_checkpoint.hpp"
#include "bindings/wrap_dataset.hpp"
#include "bindings/wrap_loader.hpp"
#include "bindings/wrap_policy.hpp"
#include "bindings/wrap_tensor.hpp"
#include "host/ckpt/pretrained_dir.hpp"
#include "host/config/config_reader.hpp"
#include "host/policy/dataset_processors.hpp"
#include "host/policy/mixture_fit.hpp"
#include "host/policy/policy_defaults.hpp"
#include "host/policy/processors.hpp"
#include "host/policy/registry.hpp"
#include "host/util/strings.hpp"
#include "host/util/torch_names.hpp"

namespace lrhost::bindings {
namespace {

policy::Policy& check_policy(lua_State* L, int index) {
  return lx_check<policy::Policy>(L, index);
}

// The features a policy is built for: a Dataset (LeRobot's dataset_to_policy_features over its
// info.json) or a table {inputs = {name = {shape...}}, outputs = {...}} whose types follow the key
// names as LeRobot's rules do (3-D observation.images.* -> VISUAL, action* -> ACTION, ...).
policy::PolicyFeatures check_features(lua_State* L, int index) {
  policy::PolicyFeatures features;
  if (lua_isnoneornil(L, index)) return features;
  if (lx_is<data::FrameSource>(L, index))
    return policy::PolicyFeatures::from_dataset(lx_check<data::FrameSource>(L, index).meta().info);
  auto table = lx_to_json(L, index, index, "features");
  for (const char* side : {"inputs", "outputs"}) {
    if (!table.contains(side)) continue;
    for (const auto& [name, shape] : table[side].items()) {
      if (!shape.is_array())
        throw LxArgError(index, std::string("features.") + side + "." + name + " must be a shape list");
      data::FeatureSpec spec;
      spec.key = name;
      spec.shape = shape.get<std::vector<int64_t>>();
      if (spec.shape.size() == 3 && name.rfind("observation.image", 0) == 0) spec.kind = data::FeatureKind::Image;
      std::string type = policy::policy_feature_type(spec);
      if (type.empty())
        throw LxArgError(
            index, std::string("features.") + side + "." + name + " is not a policy feature (observation* or action*)");
      (type == "ACTION" ? features.outputs : features.inputs).push_back({name, type, spec.shape});
    }
  }
  return features;
}

// An options table read strictly (unknown keys are errors); an empty Lua table arrives as [].
nlohmann::json check_options(lua_State* L, int index, const char* what) {
  if (lua_isnoneornil(L, index)) return nlohmann::json::object();
  lx_check_table(L, index, what);
  auto options = lx_to_json(L, index, index, what);
  return options.is_array() && options.empty() ? nlohmann::json::object() : options;
}

int w_policy_new(lua_State* L) {
  return lx_guard(L, "lr.policy.new", [&] {
    ensure_not_show_mode(L, "lr.policy.new");
    lx_check_table(L, 1, "policy config table with 'type'");
    auto config = lx_to_json(L, 1, 1, "policy");
    auto features = check_features(L, 2);
    auto options = check_options(L, 3, "policy options {use_imagenet_stats =, normalization_mapping =}");
    config::ConfigReader reader(options, "lr.policy.new options");
    bool imagenet = reader.boolean("use_imagenet_stats", true);
    // A mapping for policies whose config has none (mlp); it is saved with the processors.
    std::vector<std::pair<std::string, std::string>> mapping_override;
    reader.allow("normalization_mapping");
    if (options.contains("normalization_mapping")) {
      const auto& mapping = options["normalization_mapping"];
      if (!mapping.is_object())
        throw LxArgError(3, "normalization_mapping must be a table {STATE = \"MEAN_STD\", ...}");
      for (const auto& [type, mode] : mapping.items()) {
        if (!mode.is_string()) throw LxArgError(3, "normalization_mapping." + type + " must be a mode name");
        mapping_override.emplace_back(type, mode.get<std::string>());
      }
    }
    reader.reject_unknown();
    // A type whose new policies start from a base checkpoint (GR00T) loads it file-backed.
    const auto* spec = config.contains("type") && config["type"].is_string()
                           ? policy::find_policy_spec(config["type"].get<std::string>())
                           : nullptr;
    const auto base = spec && spec->base_weights ? spec->base_weights(config, features) : std::nullopt;
    std::shared_ptr<policy::Policy> policy;
    if (base) {
      policy = ckpt::build_with_base_weights(config, features, *base);
    } else {
      policy = policy::create_policy(config, features);
      policy->load_pretrained_parts();
    }
    if (lx_is<data::FrameSource>(L, 2)) {
      policy::check_mixture_fits(*policy, lx_check<data::FrameSource>(L, 2));
      policy::attach_dataset_processors(*policy, features, lx_check<data::FrameSource>(L, 2).meta(),
                                        {.use_imagenet_stats = imagenet, .normalization_mapping = mapping_override});
    } else if (!lua_isnoneornil(L, 3)) {
      throw LxArgError(3, "options need a Dataset as argument #2 (its stats build the processors)");
    }
    lx_push(L, policy);
    return 1;
  });
}

int w_policy_load(lua_State* L) {
  return lx_guard(L, "lr.policy.load", [&] {
    ensure_not_show_mode(L, "lr.policy.load");
    std::string dir = lx_check_string(L, 1);
    auto options =
        check_options(L, 2, "load options {strict =, rename_map =, config =, file_backed =, dataset_name =}");
    config::ConfigReader reader(options, "lr.policy.load options");
    bool strict = reader.boolean("strict", true);
    const bool file_backed = reader.boolean("file_backed", false);
    const std::string dataset_name = reader.string("dataset_name", "");
    reader.allow("rename_map");
    reader.allow("config");
    reader.reject_unknown();
    nlohmann::json changes = options.contains("config") ? options["config"] : nlohmann::json::object();
    if (!changes.is_object() && !(changes.is_array() && changes.empty()))
      throw LxArgError(2, "config must be a policy table (fields on top of the folder's config.json)");
    if (changes.is_array()) changes = nlohmann::json::object();
    ckpt::DatasetFeatures dataset;
    if (!lua_isnoneornil(L, 3)) dataset = [features = check_features(L, 3)] { return features; };
    auto policy = ckpt::load_pretrained(
        dir, strict, changes, file_backed ? ckpt::WeightLoading::file_backed : ckpt::WeightLoading::copy, dataset);
    if (!dataset_name.empty()) {  // one dataset's stats of a policy trained with dataset.stats = "per_dataset"
      if (!policy->processors())
        throw LxArgError(2, "dataset_name needs the policy's processors, and " + dir + " has no processor files");
      policy->set_processors(
          std::make_shared<policy::PolicyProcessors>(policy->processors()->for_dataset(dataset_name)));
    }
    if (options.contains("rename_map")) {
      const auto& renames = options["rename_map"];
      if (!renames.is_object() && !(renames.is_array() && renames.empty()))
        throw LxArgError(2, "rename_map must be a table {[\"dataset key\"] = \"policy key\", ...}");
      std::map<std::string, std::string> map;
      for (const auto& [from, to] : renames.items()) {
        if (!to.is_string()) throw LxArgError(2, "rename_map['" + from + "'] must be a key name");
        map[from] = to.get<std::string>();
      }
      if (!policy->processors())
        throw LxArgError(2, "rename_map needs the policy's processors, and " + dir + " has no processor files");
      auto processors = std::make_shared<policy::PolicyProcessors>(*policy->processors());
      processors->set_rename_map(map);
      policy->set_processors(std::move(processors));
    }
    lx_push(L, policy);
    return 1;
  });
}

// A list of strings at `index` (task strings).
std::vector<std::string> check_string_list(lua_State* L, int index, const char* what) {
  lx_check_table(L, index, what);
  auto list = lx_to_json(L, index, index, what);
  std::vector<std::string> strings;
  if (!list.is_array()) throw LxArgError(index, std::string("expected ") + what);
  for (const auto& item : list) {
    if (!item.is_string()) throw LxArgError(index, std::string("expected ") + what + ", got an element " + item.dump());
    strings.push_back(item.get<std::string>());
  }
  return strings;
}

int w_preprocess(lua_State* L) {
  return lx_guard(L, "Policy:preprocess", [&] {
    auto& p = check_policy(L, 1);
    const auto& processors = policy::require_processors(p, "Policy:preprocess");
    if (is_preprocessed_batch(L, 2))
      throw LxArgError(2,
                       "this batch comes from a loader built with preprocess = policy and is preprocessed "
                       "already; pass it to the policy (or acc:train_step) as it is");
    auto batch = check_batch(L, 2);
    if (lua_isnoneornil(L, 3))
      push_batch(L, processors.normalize(batch));
    else
      push_batch(L, processors.normalize(batch, check_string_list(L, 3, "a list of task strings, one per row")));
    return 1;
  });
}

// Policy:use_dataset(Dataset [, {use_imagenet_stats = true}]): fine-tuning a loaded policy on a
// dataset, as lerobot-train does with --policy.path: the processors' stats become the dataset's
// (ImageNet stats for cameras unless use_imagenet_stats = false, as lr.policy.new), the rename map
// and language steps stay, and the task table is the dataset's.
int w_use_dataset(lua_State* L) {
  return lx_guard(L, "Policy:use_dataset", [&] {
    auto& p = check_policy(L, 1);
    policy::check_mixture_fits(p, lx_check<data::FrameSource>(L, 2));
    const auto& meta = lx_check<data::FrameSource>(L, 2).meta();
    auto options = check_options(L, 3, "use_dataset options {use_imagenet_stats =}");
    config::ConfigReader reader(options, "Policy:use_dataset options");
    const bool imagenet = reader.boolean("use_imagenet_stats", true);
    reader.reject_unknown();
    policy::use_dataset(p, meta, imagenet);
    return 0;
  });
}

// Policy:prepare_training{cache_dir =, dataset = Dataset, augmentation = false} (or num_frames =,
// dataset_id = in place of the dataset): the run's facts as a policy::TrainingContext, given to the
// policy before acc:prepare; what the policy does with them is its own (policy.hpp).
int w_prepare_training(lua_State* L) {
  return lx_guard(L, "Policy:prepare_training", [&] {
    auto& p = check_policy(L, 1);
    lx_check_table(L, 2, "options {cache_dir =, dataset =, augmentation =, num_frames =, dataset_id =}");
    lua_getfield(L, 2, "dataset");
    std::optional<policy::TrainingContext::DatasetFacts> dataset;
    if (!lua_isnil(L, -1)) {
      if (!lx_is<data::FrameSource>(L, -1)) throw LxArgError(2, "dataset must be a Dataset, got " + lx_typename(L, -1));
      const auto& source = lx_check<data::FrameSource>(L, -1);
      dataset = policy::TrainingContext::DatasetFacts{source.frame_index_count(), source.identity()};
    }
    lua_pop(L, 1);
    auto context = policy::TrainingContext::read(lx_options(L, 2, 2, "prepare_training", "dataset"), dataset,
                                                 "Policy:prepare_training");
    p.prepare_training(context);
    return 0;
  });
}

// Policy:training_metrics() -> {name = number}: the policy's own figures for the log ({} for most).
int w_training_metrics(lua_State* L) {
  return lx_guard(L, "Policy:training_metrics", [&] {
    auto metrics = check_policy(L, 1).training_metrics();
    lua_createtable(L, 0, static_cast<int>(metrics.size()));
    for (const auto& [name, value] : metrics) {
      lua_pushnumber(L, value);
      lua_setfield(L, -2, name.c_str());
    }
    return 1;
  });
}

// Policy:training_flops_per_sample() -> FLOPs of training on one sample, or nil when not counted.
int w_training_flops_per_sample(lua_State* L) {
  return lx_guard(L, "Policy:training_flops_per_sample", [&] {
    if (auto flops = check_policy(L, 1).training_flops_per_sample())
      lua_pushnumber(L, *flops);
    else
      lua_pushnil(L);
    return 1;
  });
}

int w_set_tasks(lua_State* L) {
  return lx_guard(L, "Policy:set_tasks", [&] {
    auto& p = check_policy(L, 1);
    const auto& processors = policy::require_processors(p, "Policy:set_tasks");
    if (lx_is<data::FrameSource>(L, 2))
      processors.set_task_table(lx_check<data::FrameSource>(L, 2).meta().tasks);
    else
      processors.set_task_table(check_string_list(L, 2, "a Dataset or a list of task strings by task_index"));
    return 0;
  });
}

int w_postprocess(lua_State* L) {
  return lx_guard(L, "Policy:postprocess", [&] {
    auto& p = check_policy(L, 1);
    // The batch's dataset_index (optional): each sample's own stats under dataset.stats = "per_dataset".
    const torch::Tensor dataset_index = lua_isnoneornil(L, 3) ? torch::Tensor() : check_tensor(L, 3);
    push_tensor(L, policy::require_processors(p, "Policy:postprocess").unnormalize(check_tensor(L, 2), dataset_index));
    return 1;
  });
}

// Policy:needs_task(): whether its preprocessor tokenizes a task (language policies).
int w_needs_task(lua_State* L) {
  return lx_guard(L, "Policy:needs_task", [&] {
    const auto& p = check_policy(L, 1);
    lua_pushboolean(L, p.processors() != nullptr && p.processors()->has_language());
    return 1;
  });
}

int w_has_processors(lua_State* L) {
  return lx_guard(L, "Policy:has_processors", [&] {
    lua_pushboolean(L, check_policy(L, 1).processors() != nullptr);
    return 1;
  });
}

int w_save_pretrained(lua_State* L) {
  return lx_guard(L, "Policy:save_pretrained", [&] {
    auto& p = check_policy(L, 1);
    ckpt::save_pretrained(p, lx_check_string(L, 2));
    return 0;
  });
}

int w_predict_action_chunk(lua_State* L) {
  return lx_guard(L, "Policy:predict_action_chunk", [&] {
    push_tensor(L, check_policy(L, 1).run_predict_action_chunk(check_batch(L, 2)));
    return 1;
  });
}

int w_reset(lua_State* L) {
  return lx_guard(L, "Policy:reset", [&] {
    check_policy(L, 1).reset();
    return 0;
  });
}

int w_state_dict(lua_State* L) {
  return lx_guard(L, "Policy:state_dict", [&] {
    auto entries = check_policy(L, 1).state_dict();
    lua_createtable(L, 0, static_cast<int>(entries.size()));
    for (auto& [name, tensor] : entries) {
      push_tensor(L, tensor);
      lua_setfield(L, -2, name.c_str());
    }
    return 1;
  });
}

// Policy:weight_table() -> {{name =, shape = {...}, dtype =, numel =, parameter =, trainable =}, ...}:
// parameters then buffers in registration order (the order of LeRobot's state_dict).
int w_weight_table(lua_State* L) {
  return lx_guard(L, "Policy:weight_table", [&] {
    auto& p = check_policy(L, 1);
    nlohmann::json rows = nlohmann::json::array();
    auto add = [&](const std::string& name, const torch::Tensor& t, bool parameter) {
      rows.push_back({{"name", name},
                      {"shape", t.sizes().vec()},
                      {"dtype", util::dtype_name(t.scalar_type())},
                      {"numel", t.numel()},
                      {"parameter", parameter},
                      {"trainable", parameter && t.requires_grad()}});
    };
    for (const auto& item : p.named_parameters()) add(item.key(), item.value(), true);
    for (const auto& item : p.named_buffers()) add(item.key(), item.value(), false);
    lx_push_json(L, rows);
    return 1;
  });
}

int w_optimizer_preset(lua_State* L) {
  return lx_guard(L, "Policy:optimizer_preset", [&] {
    lx_push_json(L, check_policy(L, 1).optimizer_preset());
    return 1;
  });
}

int w_scheduler_preset(lua_State* L) {
  return lx_guard(L, "Policy:scheduler_preset", [&] {
    auto preset = check_policy(L, 1).scheduler_preset();
    if (preset.is_null())
      lua_pushnil(L);
    else
      lx_push_json(L, preset);
    return 1;
  });
}

int w_delta_indices(lua_State* L) {
  return lx_guard(L, "Policy:delta_indices", [&] {
    auto indices = check_policy(L, 1).delta_indices();
    lua_createtable(L, 0, static_cast<int>(indices.size()));
    for (const auto& [key, list] : indices) {
      lua_createtable(L, static_cast<int>(list.size()), 0);
      for (std::size_t i = 0; i < list.size(); ++i) {
        lua_pushnumber(L, static_cast<double>(list[i]));
        lua_rawseti(L, -2, static_cast<int>(i + 1));
      }
      lua_setfield(L, -2, key.c_str());
    }
    return 1;
  });
}

// LeRobot's resolve_delta_timestamps: offset / fps seconds per key.
int w_delta_timestamps(lua_State* L) {
  return lx_guard(L, "Policy:delta_timestamps", [&] {
    auto& p = check_policy(L, 1);
    double fps = lx_check_number(L, 2);
    if (!(fps > 0)) throw LxArgError(2, "fps must be > 0");
    auto indices = p.delta_indices();
    lua_createtable(L, 0, static_cast<int>(indices.size()));
    for (const auto& [key, list] : indices) {
      lua_createtable(L, static_cast<int>(list.size()), 0);
      for (std::size_t i = 0; i < list.size(); ++i) {
        lua_pushnumber(L, static_cast<double>(list[i]) / fps);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
      }
      lua_setfield(L, -2, key.c_str());
    }
    return 1;
  });
}

int w_features(lua_State* L) {
  return lx_guard(L, "Policy:features", [&] {
    auto features = check_policy(L, 1).features();
    lx_push_json(L, {{"inputs", policy::PolicyFeatures::list_to_json(features.inputs)},
                     {"outputs", policy::PolicyFeatures::list_to_json(features.outputs)}});
    return 1;
  });
}

int w_normalization_mapping(lua_State* L) {
  return lx_guard(L, "Policy:normalization_mapping", [&] {
    auto mapping = check_policy(L, 1).normalization_mapping();
    lua_createtable(L, 0, static_cast<int>(mapping.size()));
    for (const auto& [type, mode] : mapping) {
      lua_pushstring(L, mode.c_str());
      lua_setfield(L, -2, type.c_str());
    }
    return 1;
  });
}

// lr.policy.defaults(type [, values]): the type's full default config (null fields left out) with
// `values` on top, so a recipe's policy table lists every field and lr.config can check overrides
// of any of them. Keys that are not fields of the type are errors.
int w_policy_defaults(lua_State* L) {
  return lx_guard(L, "lr.policy.defaults", [&] {
    std::string type = lx_check_string(L, 1);
    auto defaults = policy::default_policy_config(type);
    if (!lua_isnoneornil(L, 2)) {
      lx_check_table(L, 2, "table of policy fields");
      auto values = lx_to_json(L, 2, 2, "values");
      auto full = policy::default_policy_config_with_nulls(type);
      for (const auto& [key, value] : values.items()) {
        if (!full.contains(key)) {
          std::vector<std::string> fields;
          for (const auto& [field, unused] : full.items()) fields.push_back(field);
          throw LxArgError(
              2, "'" + key + "' is not a field of policy '" + type + "' (fields: " + util::quoted_list(fields) + ")");
        }
        defaults[key] = value;
      }
    }
    lx_push_json(L, nlohmann::json(defaults));
    return 1;
  });
}

int w_policy_types(lua_State* L) {
  return lx_guard(L, "lr.policy.types", [&] {
    lx_push_json(L, policy::registered_policy_types());
    return 1;
  });
}

int w_forward(lua_State* L) {
  return lx_guard(L, "Policy:forward", [&] {
    auto& p = check_policy(L, 1);
    auto out = p.run(check_batch(L, 2));
    push_tensor(L, out.loss);
    lua_createtable(L, 0, static_cast<int>(out.parts.size()));
    for (auto& [name, tensor] : out.parts) {
      push_tensor(L, tensor);
      lua_setfield(L, -2, name.c_str());
    }
    return 2;
  });
}

int w_select_action(lua_State* L) {
  return lx_guard(L, "Policy:select_action", [&] {
    push_tensor(L, check_policy(L, 1).run_select_action(check_batch(L, 2)));
    return 1;
  });
}

void push_tensor_list(lua_State* L, const std::vector<torch::Tensor>& tensors) {
  lua_createtable(L, static_cast<int>(tensors.size()), 0);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    push_tensor(L, tensors[i]);
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

int w_parameters(lua_State* L) {
  return lx_guard(L, "Policy:parameters", [&] {
    push_tensor_list(L, check_policy(L, 1).parameters());
    return 1;
  });
}

int w_named_parameters(lua_State* L) {
  return lx_guard(L, "Policy:named_parameters", [&] {
    auto named = check_policy(L, 1).named_parameters();
    lua_createtable(L, 0, static_cast<int>(named.size()));
    for (const auto& item : named) {
      push_tensor(L, item.value());
      lua_setfield(L, -2, item.key().c_str());
    }
    return 1;
  });
}

int w_param_groups(lua_State* L) {
  return lx_guard(L, "Policy:param_groups", [&] {
    auto groups = check_policy(L, 1).param_groups();
    lua_createtable(L, static_cast<int>(groups.size()), 0);
    for (std::size_t i = 0; i < groups.size(); ++i) {
      lua_createtable(L, 0, 4);
      lua_pushstring(L, groups[i].name.c_str());
      lua_setfield(L, -2, "name");
      push_tensor_list(L, groups[i].params);
      lua_setfield(L, -2, "params");
      if (groups[i].lr) {
        lua_pushnumber(L, *groups[i].lr);
        lua_setfield(L, -2, "lr");
      }
      if (groups[i].weight_decay) {
        lua_pushnumber(L, *groups[i].weight_decay);
        lua_setfield(L, -2, "weight_decay");
      }
      lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    return 1;
  });
}

int w_train(lua_State* L) {
  return lx_guard(L, "Policy:train", [&] {
    check_policy(L, 1).train(lx_opt_boolean(L, 2).value_or(true));
    lua_settop(L, 1);
    return 1;
  });
}

int w_eval(lua_State* L) {
  return lx_guard(L, "Policy:eval", [&] {
    check_policy(L, 1).eval();
    lua_settop(L, 1);
    return 1;
  });
}

int w_is_training(lua_State* L) {
  return lx_guard(L, "Policy:is_training", [&] {
    lua_pushboolean(L, check_policy(L, 1).is_training());
    return 1;
  });
}

int w_to(lua_State* L) {
  return lx_guard(L, "Policy:to", [&] {
    auto& p = check_policy(L, 1);
    std::string target = lx_check_string(L, 2);
    if (target == "cpu" || target.rfind("cuda", 0) == 0)
      p.to(util::parse_device(target));
    else
      p.to(util::parse_dtype(target));
    lua_settop(L, 1);
    return 1;
  });
}

int w_num_parameters(lua_State* L) {
  return lx_guard(L, "Policy:num_parameters", [&] {
    lua_pushnumber(L, static_cast<double>(check_policy(L, 1).num_parameters()));
    return 1;
  });
}

int w_config(lua_State* L) {
  return lx_guard(L, "Policy:config", [&] {
    lx_push_json(L, check_policy(L, 1).rebuild_config());
    return 1;
  });
}

int w_type_name(lua_State* L) {
  return lx_guard(L, "Policy:type_name", [&] {
    lua_pushstring(L, check_policy(L, 1).type().c_str());
    return 1;
  });
}

}  // namespace

void open_policy(lua_State* L, int module) {
  const luaL_Reg methods[] = {{"forward", w_forward},
                              {"select_action", w_select_action},
                              {"predict_action_chunk", w_predict_action_chunk},
                              {"reset", w_reset},
                              {"preprocess", w_preprocess},
                              {"set_tasks", w_set_tasks},
                              {"use_dataset", w_use_dataset},
                              {"prepare_training", w_prepare_training},
                              {"training_metrics", w_training_metrics},
                              {"training_flops_per_sample", w_training_flops_per_sample},
                              {"weight_table", w_weight_table},
                              {"postprocess", w_postprocess},
                              {"has_processors", w_has_processors},
                              {"needs_task", w_needs_task},
                              {"save_pretrained", w_save_pretrained},
                              {"state_dict", w_state_dict},
                              {"parameters", w_parameters},
                              {"named_parameters", w_named_parameters},
                              {"param_groups", w_param_groups},
                              {"optimizer_preset", w_optimizer_preset},
                              {"scheduler_preset", w_scheduler_preset},
                              {"delta_indices", w_delta_indices},
                              {"delta_timestamps", w_delta_timestamps},
                              {"features", w_features},
                              {"normalization_mapping", w_normalization_mapping},
                              {"train", w_train},
                              {"eval", w_eval},
                              {"is_training", w_is_training},
                              {"to", w_to},
                              {"num_parameters", w_num_parameters},
                              {"config", w_config},
                              {"type_name", w_type_name},
                              {nullptr, nullptr}};
  lx_register_type(L, LxTraits<policy::Policy>::type, methods);
  lua_newtable(L);
  const luaL_Reg functions[] = {{"new", w_policy_new},
                                {"load", w_policy_load},
                                {"types", w_policy_types},
                                {"defaults", w_policy_defaults},
                                {nullptr, nullptr}};
  lx_set_functions(L, lua_gettop(L), functions);
  lua_setfield(L, module, "policy");
  // The checkpoint functions belong with the policy they save (lr.checkpoint, lr.*_safetensors).
  open_checkpoint(L, module);
}

}  // namespace lrhost::bindings
