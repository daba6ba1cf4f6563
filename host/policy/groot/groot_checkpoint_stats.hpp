// The numerical core of GR00T N1.7's checkpoint-statistics path (a base checkpoint that carries its own
// statistics.json[embodiment_tag] and processor_config.json processor_kwargs.modality_configs[tag]), as
// plain functions for ABSOLUTE action groups only (LeRobot 0.6.1, lerobot/policies/groot/processor_groot.py
// and utils.py): parsing one embodiment's assets, the flat LeRobot stats built from them, the pack step's
// state / action normalisation and GrootN17ActionDecodeStep's decode (with its LIBERO transform).
// groot_geometry decides when this path applies (parse returns nullopt where LeRobot falls back to dataset
// stats); GrootProcessorSteps runs it, feeding the normalised tensors to groot_pack_state /
// groot_pack_action with null stats.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/policy/groot/groot_pack.hpp"

namespace lrhost::policy::groot {

// One modality group (a state or action modality key) and its statistics as doubles, exactly as the JSON
// holds them. `lo` / `hi` are the bounds LeRobot normalises with: q01 / q99 when use_percentiles, else
// min / max. All four vectors have `dim` entries.
struct GrootStatGroup {
  std::string key;
  int64_t dim = 0;
  std::vector<double> lo, hi, mean, std;
};

// What modality_configs[tag] says beyond the statistics, which LeRobot applies whether or not the
// checkpoint has statistics for the tag.
struct GrootCheckpointLayout {
  // len(modality_configs[tag].action.delta_indices), nullopt when absent / empty
  // (_load_n1_7_checkpoint_action_horizon): the pack step's valid horizon; the decode step truncates
  // the chunk to it.
  std::optional<int64_t> valid_action_horizon;
  // modality_configs[tag].video.modality_keys (string entries), nullopt when absent / empty
  // (_load_n1_7_checkpoint_video_modality_keys): the camera order.
  std::optional<std::vector<std::string>> video_modality_keys;
  // len(modality_configs[tag].video.delta_indices), nullopt when absent / empty
  // (_load_n1_7_checkpoint_video_horizon): the frames per camera the pack step aligns to.
  std::optional<int64_t> video_horizon;
};
// Of one embodiment's modality config object (anything else: all nullopt).
GrootCheckpointLayout groot_checkpoint_layout(const nlohmann::json& modality_config);

// One embodiment's checkpoint assets.
struct GrootCheckpointStats {
  std::string embodiment_tag;
  std::vector<GrootStatGroup> state_groups;   // modality_configs[tag].state.modality_keys order
  std::vector<GrootStatGroup> action_groups;  // modality_configs[tag].action.modality_keys order
  bool use_percentiles = false;               // processor_kwargs.use_percentiles
  GrootCheckpointLayout layout;

  int64_t state_dim() const;   // Σ state group dims
  int64_t action_dim() const;  // Σ action group dims
};

// Parses `statistics` (statistics.json's root object) and `processor_config` (processor_config.json's
// root object; its processor_kwargs) for `tag`. nullopt where LeRobot finds no checkpoint stats for the
// tag (statistics[tag] or modality_configs[tag] absent / not an object, or no group at all) and so uses
// the dataset's. Refusals, all naming `source` and the group: NotImplemented for
// processor_kwargs.use_relative_action, an action group whose rep is not absolute (relative, delta) and
// an eef group with a rotation format; ConfigError for a listed key without its stats (LeRobot's
// KeyError), a stat that is not a flat non-empty list of numbers (per-timestep 2-D stats included),
// stats of different lengths within a group, and groups in one modality but none in the other.
std::optional<GrootCheckpointStats> parse_groot_checkpoint_stats(const nlohmann::json& statistics,
                                                                 const nlohmann::json& processor_config,
                                                                 const std::string& tag, const std::string& source);

// One stat's values as the float32 tensor LeRobot makes of its Python floats (torch.as_tensor /
// np.asarray(dtype=float32): one rounding, double -> float32).
torch::Tensor groot_stat_tensor(const std::vector<double>& values, const torch::Device& device = torch::kCPU);

// A modality's flat stats as LeRobot's flatten_n1_7_modality_stats builds them: the groups' values
// concatenated in order under min / max (the q01 / q99 values when use_percentiles), mean, std.
struct GrootFlatStats {
  std::vector<double> min, max, mean, std;
  // min / max as the pack step's float32 tensors (torch.as_tensor of the Python floats).
  MinMaxStats min_max() const;
};
struct GrootCheckpointFlatStats {
  GrootFlatStats state;   // observation.state
  GrootFlatStats action;  // action
};
GrootCheckpointFlatStats groot_checkpoint_flat_stats(const GrootCheckpointStats& stats);

// GrootN17PackInputsStep's state normalisation with checkpoint stats: state (B, D) normalised with the
// FLAT state stats (_min_max_norm: truncated / padded to D with 0 / 1, 0 where hi == lo, clamped when
// `clip`), shape kept. Pad it with groot_pack_state(…, nullptr, sizes).
torch::Tensor groot_checkpoint_normalize_state(const torch::Tensor& state, const GrootCheckpointStats& stats,
                                               bool clip);

// Its action normalisation: action (B, T, D) or (B, D), shape kept. When D equals Σ action group dims,
// each group with its own bounds cast to the action dtype (_normalize_action_groups_for_training);
// otherwise LeRobot's flat fallback with the flat action stats (as the state). Pad / mask it with
// groot_pack_action(…, nullptr, sizes).
torch::Tensor groot_checkpoint_normalize_action(const torch::Tensor& action, const GrootCheckpointStats& stats,
                                                bool clip);

// GrootN17ActionDecodeStep (use_relative_action false) on a model action (B, T, D_model) or
// (B, D_model), D_model >= Σ action group dims (DataError otherwise): truncated to
// max(1, min(T, valid_action_horizon)) steps, each group decoded in float32 as
// (clamp(y, -1, 1) + 1)·0.5·(hi - lo) + lo (no hi == lo special case), concatenated, sliced to
// env_action_dim when it is nonzero and smaller; with `libero` (action_decode_transform "libero") the
// "gripper" group's one value g becomes -sign(2g - 1) (ConfigError when the groups have no scalar
// "gripper" inside the sliced action); cast back to the action dtype.
torch::Tensor groot_checkpoint_decode_action(const torch::Tensor& action, const GrootCheckpointStats& stats,
                                             int64_t env_action_dim, bool libero = false);

}  // namespace lrhost::policy::groot
