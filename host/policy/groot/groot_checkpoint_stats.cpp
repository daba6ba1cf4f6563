// GR00T N1.7's checkpoint-statistics numerics for absolute action groups; see groot_checkpoint_stats.hpp.
// Line numbers cite LeRobot 0.6.1's lerobot/policies/groot/processor_groot.py unless utils.py is named.
#include "host/policy/groot/groot_checkpoint_stats.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cctype>

#include "host/util/error.hpp"

namespace lrhost::policy::groot {

namespace {

// config_value (utils.py:88-103): enum names lower-cased, "_" spellings of the formats mapped to "+".
std::string ckpt_config_value(const nlohmann::json& value) {
  if (value.is_null()) return "none";  // str(None).lower(), as LeRobot compares it
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  if (text == "xyz_rot6d") return "xyz+rot6d";
  if (text == "xyz_rotvec") return "xyz+rotvec";
  return text;
}

const nlohmann::json& ckpt_member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json absent;
  if (!object.is_object()) return absent;
  const auto it = object.find(key);
  return it == object.end() ? absent : *it;
}

// One stat of a group as doubles. LeRobot flattens nested lists (as_float_list) but then sizes the group
// by the first row (stat_dim_from_entry); a per-timestep 2-D stat is the relative path's, refused here.
std::vector<double> ckpt_stat_values(const nlohmann::json& group_stats, const std::string& name,
                                     const std::string& where) {
  const auto& value = ckpt_member(group_stats, name.c_str());
  if (value.is_null()) throw util::ConfigError(where + ": missing '" + name + "' statistics (LeRobot's KeyError)");
  if (!value.is_array() || value.empty())
    throw util::ConfigError(where + "." + name + ": expected a non-empty list of numbers, got " + value.dump());
  std::vector<double> out;
  out.reserve(value.size());
  for (const auto& v : value) {
    if (!v.is_number())
      throw util::ConfigError(where + "." + name + ": expected a flat list of numbers (per-timestep stats are the " +
                              "relative-action path's), got an entry " + v.dump());
    out.push_back(v.get<double>());
  }
  return out;
}

// The groups of one modality in modality_keys order, with the stats flatten_n1_7_modality_stats reads
// (utils.py:127-186): q01 / q99 in place of min / max when use_percentiles, plus mean and std.
std::vector<GrootStatGroup> ckpt_groups(const nlohmann::json& raw_stats, const nlohmann::json& modality_config,
                                        const char* modality, bool use_percentiles, const std::string& source) {
  std::vector<GrootStatGroup> groups;
  const auto& config = ckpt_member(modality_config, modality);
  const auto& keys = ckpt_member(config, "modality_keys");
  // flatten returns {} for a modality config that is not a dict or keys that are not a list.
  if (!config.is_object() || !keys.is_array()) return groups;
  const auto& source_stats = ckpt_member(raw_stats, modality);
  const auto& action_configs = ckpt_member(config, "action_configs");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string where = source + ": " + modality + " group #" + std::to_string(i);
    if (!keys[i].is_string())
      throw util::ConfigError(where + ": modality key " + keys[i].dump() + " is not a string (LeRobot skips it)");
    GrootStatGroup group;
    group.key = keys[i].get<std::string>();
    const std::string named = source + ": " + modality + "." + group.key;
    if (std::string(modality) == "action" && action_configs.is_array() && i < action_configs.size()) {
      // The absolute decode of GrootN17ActionDecodeStep (:2360-2391) applies only to rep "absolute";
      // relative groups need the raw-state reference and per-timestep relative_action stats.
      const auto& cfg = action_configs[i];
      const std::string rep = ckpt_config_value(ckpt_member(cfg, "rep"));
      if (cfg.is_object() && cfg.contains("rep") && rep != "absolute")
        throw util::NotImplemented(named + ": action rep '" + rep +
                                   "' is not implemented in lrhost (absolute action groups only)");
      const std::string type = ckpt_config_value(ckpt_member(cfg, "type"));
      const auto& format = ckpt_member(cfg, "format");
      if (type == "eef" && !format.is_null() && ckpt_config_value(format) != "default")
        throw util::NotImplemented(named + ": eef action format '" + ckpt_config_value(format) +
                                   "' (rotations) is not implemented in lrhost");
    }
    if (!source_stats.is_object() || !source_stats.contains(group.key) || !source_stats[group.key].is_object())
      throw util::ConfigError(named + ": no statistics for this group in statistics.json (LeRobot's KeyError)");
    const auto& entry = source_stats[group.key];
    group.lo = ckpt_stat_values(entry, use_percentiles ? "q01" : "min", named);
    group.hi = ckpt_stat_values(entry, use_percentiles ? "q99" : "max", named);
    group.mean = ckpt_stat_values(entry, "mean", named);
    group.std = ckpt_stat_values(entry, "std", named);
    group.dim = static_cast<int64_t>(group.mean.size());
    for (const auto* values : {&group.lo, &group.hi, &group.std})
      if (static_cast<int64_t>(values->size()) != group.dim)
        throw util::ConfigError(named + ": its statistics differ in length (" + std::to_string(values->size()) +
                                " vs mean's " + std::to_string(group.dim) + ")");
    groups.push_back(std::move(group));
  }
  return groups;
}

int64_t ckpt_sum_dims(const std::vector<GrootStatGroup>& groups) {
  int64_t total = 0;
  for (const auto& g : groups) total += g.dim;
  return total;
}

std::string ckpt_shape_text(const torch::Tensor& t) {
  return c10::str(t.sizes());
}

}  // namespace

int64_t GrootCheckpointStats::state_dim() const {
  return ckpt_sum_dims(state_groups);
}
int64_t GrootCheckpointStats::action_dim() const {
  return ckpt_sum_dims(action_groups);
}

GrootCheckpointLayout groot_checkpoint_layout(const nlohmann::json& modality_config) {
  GrootCheckpointLayout out;
  // _load_n1_7_checkpoint_action_horizon (:310-326): len(delta_indices) or None.
  const auto& deltas = ckpt_member(ckpt_member(modality_config, "action"), "delta_indices");
  if (deltas.is_array() && !deltas.empty()) out.valid_action_horizon = static_cast<int64_t>(deltas.size());
  // _load_n1_7_checkpoint_video_modality_keys (:348-365): the string entries, or None when there are none.
  const auto& cams = ckpt_member(ckpt_member(modality_config, "video"), "modality_keys");
  if (cams.is_array()) {
    std::vector<std::string> keys;
    for (const auto& k : cams)
      if (k.is_string()) keys.push_back(k.get<std::string>());
    if (!keys.empty()) out.video_modality_keys = std::move(keys);
  }
  // _load_n1_7_checkpoint_video_horizon (:329-345): len(delta_indices) or None.
  const auto& frames = ckpt_member(ckpt_member(modality_config, "video"), "delta_indices");
  if (frames.is_array() && !frames.empty()) out.video_horizon = static_cast<int64_t>(frames.size());
  return out;
}

std::optional<GrootCheckpointStats> parse_groot_checkpoint_stats(const nlohmann::json& statistics,
                                                                 const nlohmann::json& processor_config,
                                                                 const std::string& tag, const std::string& source) {
  // _load_n1_7_checkpoint_processor_assets (:162-243): every lookup falls back to {} when absent or
  // not a dict, and an empty result means "no checkpoint stats" (has_modality_stats, :1168).
  const auto& kwargs_in = ckpt_member(processor_config, "processor_kwargs");
  const nlohmann::json kwargs = kwargs_in.is_object() ? kwargs_in : nlohmann::json::object();
  const auto& raw_stats = ckpt_member(statistics, tag.c_str());
  const auto& modality_config = ckpt_member(ckpt_member(kwargs, "modality_configs"), tag.c_str());
  if (!raw_stats.is_object() || !modality_config.is_object()) return std::nullopt;
  // bool(processor_kwargs.get("use_relative_action", False)) (:190): any truthy value.
  const auto& relative = ckpt_member(kwargs, "use_relative_action");
  if (!relative.is_null() && relative != false && relative != 0 && relative != "" &&
      !(relative.is_structured() && relative.empty()))
    throw util::NotImplemented(source +
                               ": processor_kwargs.use_relative_action = true (relative N1.7 actions) is "
                               "not implemented in lrhost");

  GrootCheckpointStats out;
  out.embodiment_tag = tag;
  // bool(processor_kwargs.get("use_percentiles", False)) (:232, :291): only JSON true / nonzero counts.
  const auto& percentiles = ckpt_member(kwargs, "use_percentiles");
  if (percentiles.is_boolean())
    out.use_percentiles = percentiles.get<bool>();
  else if (percentiles.is_number())
    out.use_percentiles = percentiles.get<double>() != 0.0;
  else if (!percentiles.is_null())
    throw util::ConfigError(source + ": processor_kwargs.use_percentiles must be a boolean, got " + percentiles.dump());
  out.state_groups = ckpt_groups(raw_stats, modality_config, "state", out.use_percentiles, source);
  out.action_groups = ckpt_groups(raw_stats, modality_config, "action", out.use_percentiles, source);
  if (out.state_groups.empty() && out.action_groups.empty()) return std::nullopt;
  if (out.state_groups.empty() || out.action_groups.empty())
    throw util::ConfigError(
        source + ": embodiment '" + tag + "' has " +
        (out.state_groups.empty() ? "action groups but no state groups" : "state groups but no action groups") +
        " (LeRobot would normalise the other with min 0 / max 1)");

  out.layout = groot_checkpoint_layout(modality_config);
  return out;
}

torch::Tensor groot_stat_tensor(const std::vector<double>& values, const torch::Device& device) {
  // torch.as_tensor / np.asarray(dtype=float32) of Python floats: one rounding, double -> float32.
  std::vector<float> narrowed(values.begin(), values.end());
  return torch::tensor(narrowed, torch::TensorOptions().dtype(torch::kFloat32).device(device));
}

MinMaxStats GrootFlatStats::min_max() const {
  return {groot_stat_tensor(min, torch::kCPU), groot_stat_tensor(max, torch::kCPU)};
}

GrootCheckpointFlatStats groot_checkpoint_flat_stats(const GrootCheckpointStats& stats) {
  // _load_n1_7_checkpoint_stats (:261-307) -> flatten_n1_7_modality_stats: concatenation in group order.
  auto flatten = [](const std::vector<GrootStatGroup>& groups) {
    GrootFlatStats flat;
    for (const auto& g : groups) {
      flat.min.insert(flat.min.end(), g.lo.begin(), g.lo.end());
      flat.max.insert(flat.max.end(), g.hi.begin(), g.hi.end());
      flat.mean.insert(flat.mean.end(), g.mean.begin(), g.mean.end());
      flat.std.insert(flat.std.end(), g.std.begin(), g.std.end());
    }
    return flat;
  };
  return {flatten(stats.state_groups), flatten(stats.action_groups)};
}

torch::Tensor groot_checkpoint_normalize_state(const torch::Tensor& state, const GrootCheckpointStats& stats,
                                               bool clip) {
  // The pack step normalises the state with its flat `stats` (:1880, _min_max_norm), not per group.
  if (state.dim() != 2) throw util::DataError("GR00T observation.state must be (B, D), got " + ckpt_shape_text(state));
  const auto flat = groot_checkpoint_flat_stats(stats).state.min_max();
  return groot_min_max_normalize(state, {flat.min.to(state.device()), flat.max.to(state.device())}, clip);
}

torch::Tensor groot_checkpoint_normalize_action(const torch::Tensor& action, const GrootCheckpointStats& stats,
                                                bool clip) {
  if (action.dim() != 2 && action.dim() != 3)
    throw util::DataError("GR00T action must be (B, D) or (B, T, D), got " + ckpt_shape_text(action));
  const int64_t dim = action.size(-1);
  if (dim != stats.action_dim()) {
    // _normalize_action_groups_for_training returns None when the groups do not tile D (:1734, :1767);
    // the step then takes the flat fallback on (B·T, D) (:1924-1925), elementwise the same as on (…, D).
    const auto flat = groot_checkpoint_flat_stats(stats).action.min_max();
    return groot_min_max_normalize(action, {flat.min.to(action.device()), flat.max.to(action.device())}, clip);
  }
  // :1705-1769: each group with its bounds cast to the group's dtype (np.float32 first, :2238), the same
  // op order as _min_max_norm.
  std::vector<torch::Tensor> parts;
  int64_t start = 0;
  for (const auto& g : stats.action_groups) {
    const auto group = action.narrow(-1, start, g.dim);
    const auto lo = groot_stat_tensor(g.lo, action.device()).to(action.scalar_type());
    const auto hi = groot_stat_tensor(g.hi, action.device()).to(action.scalar_type());
    const auto denom = hi - lo;
    const auto mask = denom != 0;
    const auto safe = torch::where(mask, denom, torch::ones_like(denom));
    auto normalized = torch::where(mask, (group - lo).mul(2).div(safe).sub(1), torch::zeros_like(group));
    if (clip) normalized = normalized.clamp(-1.0, 1.0);
    parts.push_back(normalized);
    start += g.dim;
  }
  return torch::cat(parts, -1);
}

torch::Tensor groot_checkpoint_decode_action(const torch::Tensor& action, const GrootCheckpointStats& stats,
                                             int64_t env_action_dim, bool libero) {
  // GrootN17ActionDecodeStep.__call__ (:2329-2446) with use_relative_action false and no transform.
  if (action.dim() != 2 && action.dim() != 3)
    throw util::DataError("GR00T model action must be (B, D) or (B, T, D), got " + ckpt_shape_text(action));
  if (action.size(-1) < stats.action_dim())
    throw util::DataError("GR00T model action has " + std::to_string(action.size(-1)) +
                          " dims, fewer than the checkpoint's action groups (" + std::to_string(stats.action_dim()) +
                          ")");
  // The numpy copy is float32 (.float()); a (B, D) action is decoded as a one-step chunk (:2354-2359).
  const bool single_step = action.dim() == 2;
  auto y = action.detach().to(torch::kFloat32);
  if (single_step) y = y.unsqueeze(1);
  // _n1_7_decode_valid_horizon (:2245-2251).
  if (stats.layout.valid_action_horizon)
    y = y.narrow(1, 0, std::max<int64_t>(1, std::min<int64_t>(y.size(1), *stats.layout.valid_action_horizon)));
  std::vector<torch::Tensor> parts;
  int64_t start = 0;
  for (const auto& g : stats.action_groups) {
    // _unnormalize_min_max (:2241-2242): ((clip(y) + 1)·0.5)·(hi - lo) + lo, all float32.
    const auto lo = groot_stat_tensor(g.lo, y.device());
    const auto hi = groot_stat_tensor(g.hi, y.device());
    parts.push_back(y.narrow(-1, start, g.dim).clamp(-1.0, 1.0).add(1.0).mul(0.5).mul(hi - lo).add(lo));
    start += g.dim;
  }
  auto decoded = torch::cat(parts, -1);
  if (env_action_dim > 0 && decoded.size(-1) > env_action_dim) decoded = decoded.narrow(-1, 0, env_action_dim);
  if (libero) {
    // _apply_n1_7_action_decode_transform (:2273-2293): the gripper group by name, in float32.
    int64_t gripper = -1, offset = 0;
    for (const auto& g : stats.action_groups) {
      if (g.key == "gripper") {
        if (g.dim != 1)
          throw util::ConfigError("GR00T's LIBERO action decode expects a scalar 'gripper' action group; it has " +
                                  std::to_string(g.dim) + " dims");
        gripper = offset;
      }
      offset += g.dim;
    }
    if (gripper < 0)
      throw util::ConfigError(
          "GR00T's LIBERO action decode needs an action group named 'gripper' (checkpoint "
          "embodiment '" +
              stats.embodiment_tag + "' has none)",
          "set policy.action_decode_transform = \"none\" for this embodiment");
    if (gripper >= decoded.size(-1))
      throw util::ConfigError("GR00T's LIBERO action decode: the gripper action (dim " + std::to_string(gripper) +
                              ") is outside the environment's " + std::to_string(decoded.size(-1)) + " action dims");
    decoded = decoded.clone();
    auto g = decoded.narrow(-1, gripper, 1);
    g.copy_(-torch::sign(g * 2.0 - 1.0));
  }
  if (single_step) decoded = decoded.select(1, 0);
  return decoded.to(action.scalar_type()).contiguous();
}

}  // namespace lrhost::policy::groot
