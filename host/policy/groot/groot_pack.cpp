// GR00T N1.7's pack / unpack math (see groot_pack.hpp). Line references are to LeRobot 0.6.1's
// lerobot/policies/groot/processor_groot.py unless another file is named.
#include "host/policy/groot/groot_pack.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <set>
#include <utility>

#include "host/util/error.hpp"
#include "host/util/strings.hpp"

namespace lrhost::policy::groot {
namespace {

std::string pack_shape_text(const torch::Tensor& t) {
  std::string text = "(";
  for (int64_t i = 0; i < t.dim(); ++i) text += (i ? ", " : "") + std::to_string(t.size(i));
  return text + ")";
}

// The pack step's `_align_vec` (:1795-1810): float32 on `device`, truncated to `dim` or padded with
// `fill`; an absent entry is LeRobot's torch.zeros / torch.ones default.
torch::Tensor pack_aligned_stat(const torch::Tensor& stat, int64_t dim, double fill, const torch::Device& device) {
  torch::Tensor t = stat.defined() ? stat : torch::full({dim}, fill);
  t = t.flatten().to(device, torch::kFloat32);
  const int64_t d = t.numel() > 0 ? t.size(-1) : 0;
  if (d == dim) return t;
  if (d < dim) return torch::cat({t, torch::full({dim - d}, fill, t.options())}, 0);
  return t.slice(0, 0, dim);
}

// The unpack step's stats (:2493-2507): the action dtype, and when the length differs the first d
// values zero-padded (F.pad's default) whatever the entry is.
torch::Tensor unpack_aligned_stat(const torch::Tensor& stat, int64_t d, double absent, const torch::Tensor& like) {
  torch::Tensor t = stat.defined() ? stat : torch::full({d}, absent);
  t = t.to(like.device(), like.scalar_type()).flatten();
  if (t.numel() == d) return t;
  t = t.slice(0, 0, d);
  return torch::constant_pad_nd(t, {0, std::max<int64_t>(0, d - t.numel())}, 0);
}

// Python's str.isspace() on an ASCII character: the C whitespace plus the four separators 0x1c-0x1f
// (Unicode bidi classes B / S, which Python counts).
bool pack_is_python_space(unsigned char c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20);
}

std::string pack_formalize(const std::string& text) {
  std::string out;
  for (const unsigned char c : text) {
    if (c >= 0x80)
      throw util::DataError("GR00T task text '" + text +
                                "' is not ASCII: LeRobot formalizes it with Python's "
                                "Unicode lower() / isalnum(), which lrhost does not reproduce",
                            "use an ASCII task string, or a checkpoint with formalize_language false");
    const unsigned char lower = (c >= 'A' && c <= 'Z') ? static_cast<unsigned char>(c - 'A' + 'a') : c;
    const bool alnum = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9');
    if (alnum || pack_is_python_space(lower) || lower == '_') out.push_back(static_cast<char>(lower));
  }
  return out;
}

}  // namespace

torch::Tensor groot_min_max_normalize(const torch::Tensor& x, const MinMaxStats& stats, bool clip) {
  // _min_max_norm (:1812-1826); the op order (2·(x - min), then / denom, then - 1) is LeRobot's.
  const int64_t dim = x.size(-1);
  const auto min_v = pack_aligned_stat(stats.min, dim, 0.0, x.device());
  const auto max_v = pack_aligned_stat(stats.max, dim, 1.0, x.device());
  const auto denom = max_v - min_v;
  const auto mask = denom != 0;
  const auto safe_denom = torch::where(mask, denom, torch::ones_like(denom));
  const auto mapped = (x - min_v).mul(2).div(safe_denom).sub(1);
  auto normalized = torch::where(mask, mapped, torch::zeros_like(mapped));
  if (clip) normalized = normalized.clamp(-1.0, 1.0);
  return normalized;
}

torch::Tensor groot_pack_state(const torch::Tensor& state, const MinMaxStats* stats, const GrootPackSizes& sizes) {
  // :1869-1890 (the raw-state cache and the train-time state dropout are not part of a new embodiment:
  // no modality config, state_dropout_prob 0).
  if (state.dim() != 2) throw util::DataError("GR00T observation.state must be (B, D), got " + pack_shape_text(state));
  const int64_t batch = state.size(0), dim = state.size(1);
  if (dim > sizes.max_state_dim)
    throw util::DataError("GR00T observation.state has " + std::to_string(dim) + " dims, more than max_state_dim " +
                          std::to_string(sizes.max_state_dim));
  auto out = stats ? groot_min_max_normalize(state, *stats, sizes.clip_outliers) : state;
  out = out.unsqueeze(1);
  if (dim < sizes.max_state_dim)
    out = torch::cat({out, torch::zeros({batch, 1, sizes.max_state_dim - dim}, out.options())}, 2);
  return out;
}

GrootPackedAction groot_pack_action(const torch::Tensor& action_in, const torch::Tensor& action_is_pad,
                                    const MinMaxStats* stats, const GrootPackSizes& sizes) {
  // :1892-1972.
  torch::Tensor action = action_in;
  if (action.dim() == 2)
    action = action.unsqueeze(1);
  else if (action.dim() != 3)
    throw util::DataError("GR00T action must be (B, D) or (B, T, D), got " + pack_shape_text(action_in));
  const int64_t batch = action.size(0), dim = action.size(2);
  int64_t horizon = action.size(1);
  if (horizon > sizes.action_horizon)
    throw util::DataError("GR00T action horizon " + std::to_string(horizon) + " exceeds action_horizon " +
                          std::to_string(sizes.action_horizon));
  if (dim > sizes.max_action_dim)
    throw util::DataError("GR00T action has " + std::to_string(dim) + " dims, more than max_action_dim " +
                          std::to_string(sizes.max_action_dim));
  if (stats)
    action = groot_min_max_normalize(action.reshape({batch * horizon, dim}), *stats, sizes.clip_outliers)
                 .view({batch, horizon, dim});
  const int64_t valid_horizon = std::min({horizon, sizes.valid_action_horizon, sizes.action_horizon});
  if (dim < sizes.max_action_dim)
    action = torch::cat({action, torch::zeros({batch, horizon, sizes.max_action_dim - dim}, action.options())}, 2);
  if (horizon < sizes.action_horizon) {
    action = torch::cat(
        {action, torch::zeros({batch, sizes.action_horizon - horizon, sizes.max_action_dim}, action.options())}, 1);
    horizon = sizes.action_horizon;
  }
  auto horizon_valid = torch::zeros({batch, horizon}, action.options().dtype(torch::kBool));
  horizon_valid.slice(1, 0, valid_horizon).fill_(true);
  if (action_is_pad.defined()) {
    auto pad = action_is_pad.to(action.device(), torch::kBool);
    // LeRobot's 1-D shapes (:1942-1946); `horizon` is already the padded one here.
    if (pad.dim() == 1) {
      if (batch == 1 && pad.numel() == horizon)
        pad = pad.unsqueeze(0);
      else if (horizon == 1 && pad.numel() == batch)
        pad = pad.view({batch, 1});
    }
    if (pad.dim() != 2 || pad.size(0) != batch)
      throw util::DataError("GR00T action_is_pad must have shape (B, T) matching the action batch; got " +
                            pack_shape_text(action_is_pad) + " for action " + pack_shape_text(action_in));
    const int64_t pad_horizon = std::min(horizon, pad.size(1));
    auto head = horizon_valid.slice(1, 0, pad_horizon);
    head.bitwise_and_(pad.slice(1, 0, pad_horizon).logical_not());
  }
  if (valid_horizon < horizon || action_is_pad.defined()) {
    // A multiply, as LeRobot does (:1956-1959): a negative value in a padded row becomes -0.0.
    action = action.clone();
    action.slice(1, valid_horizon).zero_();
    action = action * horizon_valid.unsqueeze(-1).to(action.scalar_type());
  }
  auto action_mask = torch::zeros({batch, horizon, sizes.max_action_dim}, action.options().dtype(torch::kFloat32));
  action_mask.slice(2, 0, dim).copy_(horizon_valid.unsqueeze(-1).to(torch::kFloat32).expand({batch, horizon, dim}));
  return {action, action_mask};
}

torch::Tensor groot_inference_action_mask(int64_t batch, const GrootPackSizes& sizes, const torch::Device& device) {
  // :1974-1980.
  auto mask = torch::zeros({batch, sizes.action_horizon}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  mask.slice(1, 0, std::min(sizes.valid_action_horizon, sizes.action_horizon)).fill_(1.0);
  return mask;
}

// LeRobot 0.6.1 processor_groot.py:107-121.
const std::vector<std::pair<std::string, int64_t>>& default_embodiment_mapping() {
  static const std::vector<std::pair<std::string, int64_t>> mapping{
      {"oxe_droid_relative_eef_relative_joint", 24},
      {"xdof_relative_eef_relative_joint", 27},
      {"xdof_relative_eef_relative_joint_subtask", 27},
      {"real_g1_relative_eef_relative_joints", 25},
      {"real_r1_pro_sharpa_relative_eef", 26},
      {"real_r1_pro_sharpa_relative_eef_human", 26},
      {"real_r1_pro_sharpa_relative_eef_maxinsights", 26},
      {"real_r1_pro_sharpa_relative_eef_mecka", 26},
      {"unitree_g1_full_body_with_waist_height_nav_cmd", 25},
      {"simpler_env_google", 0},
      {"simpler_env_widowx", 1},
      {"libero_sim", 2},
      {"new_embodiment", 10}};
  return mapping;
}

std::vector<std::string> groot_language_batch(const std::vector<std::string>& tasks, int64_t batch, bool formalize) {
  // utils.py:233-264.
  const std::string default_language = "Perform the task.";
  std::vector<std::string> languages;
  if (tasks.empty())
    languages.assign(static_cast<std::size_t>(batch), default_language);
  else if (tasks.size() == 1 && batch > 1)
    languages.assign(static_cast<std::size_t>(batch), tasks.front());
  else if (static_cast<int64_t>(tasks.size()) != batch)
    throw util::DataError("GR00T language batch has " + std::to_string(tasks.size()) +
                          " entries, but the input batch has " + std::to_string(batch));
  else
    languages = tasks;
  for (auto& text : languages) {
    if (text.empty()) text = default_language;
    if (formalize) text = pack_formalize(text);
  }
  return languages;
}

int64_t groot_embodiment_id(const std::string& embodiment_tag) {
  for (const auto& [tag, id] : default_embodiment_mapping())
    if (tag == embodiment_tag) return id;
  std::string known;
  for (const auto& entry : default_embodiment_mapping()) known += (known.empty() ? "" : ", ") + entry.first;
  throw util::ConfigError(
      "GR00T embodiment_tag '" + embodiment_tag + "' is not in LeRobot's N1.7 embodiment mapping (" + known + ")",
      "LeRobot would silently use id 0 (simpler_env_google); pick one of the known tags");
}

torch::Tensor groot_embodiment_ids(const std::string& embodiment_tag, int64_t batch, const torch::Device& device) {
  return torch::full({batch}, groot_embodiment_id(embodiment_tag),
                     torch::TensorOptions().dtype(torch::kInt32).device(device));
}

std::vector<std::string> groot_camera_order(const std::vector<std::string>& observation_keys) {
  // _ordered_image_keys without video_modality_keys (:1563-1569). Byte order is code-point order in UTF-8.
  std::vector<std::string> cameras;
  bool has_single = false;
  for (const auto& key : observation_keys) {
    if (key.rfind("observation.images", 0) == 0) cameras.push_back(key);
    if (key == "observation.image") has_single = true;
  }
  if (cameras.empty() && has_single) return {"observation.image"};
  std::sort(cameras.begin(), cameras.end());
  cameras.erase(std::unique(cameras.begin(), cameras.end()), cameras.end());
  return cameras;
}

GrootCameraOrder groot_checkpoint_camera_order(const std::vector<std::string>& observation_keys,
                                               const std::vector<std::string>& video_modality_keys) {
  GrootCameraOrder order;
  std::set<std::string> available;
  bool has_single = false;
  for (const auto& key : observation_keys) {
    if (key.rfind("observation.images", 0) == 0) available.insert(key);
    if (key == "observation.image") has_single = true;
  }
  if (available.empty() && has_single) {
    order.cameras = {"observation.image"};
    return order;
  }
  for (const auto& modality_key : video_modality_keys) {
    std::vector<std::string> candidates{"observation.images." + modality_key};
    // LeRobot's alias for LIBERO conversions that name the wrist camera image2.
    if (modality_key == "wrist_image") candidates.push_back("observation.images.image2");
    const auto match = std::find_if(candidates.begin(), candidates.end(),
                                    [&](const std::string& c) { return available.count(c) > 0; });
    if (match == candidates.end())
      order.unmatched.push_back(modality_key);
    else
      order.cameras.push_back(*match);
  }
  if (order.cameras.empty())
    throw util::DataError(
        "GR00T: none of the checkpoint's video modality keys [" + util::quoted_list(video_modality_keys) +
            "] matches a camera of the batch [" + util::quoted_list({available.begin(), available.end()}) + "]",
        "rename the cameras to observation.images.<key> with the checkpoint's keys (rename_map); "
        "LeRobot would feed every camera in sorted order, a layout the checkpoint was not trained on");
  for (const auto& key : available)
    if (std::find(order.cameras.begin(), order.cameras.end(), key) == order.cameras.end()) order.unused.push_back(key);
  return order;
}

torch::Tensor groot_unpack_action(const torch::Tensor& action_in, const MinMaxStats* stats,
                                  const GrootUnpackOptions& options) {
  // GrootActionUnpackUnnormalizeStep.__call__ (:2473-2521).
  torch::Tensor action = action_in;
  if (action.dim() == 0) throw util::DataError("GR00T action to unpack must have at least one dim");
  if (options.env_action_dim > 0) {
    if (action.size(-1) < options.env_action_dim)
      throw util::DataError("GR00T model action has " + std::to_string(action.size(-1)) +
                            " dims, fewer than env_action_dim " + std::to_string(options.env_action_dim));
    action = action.slice(-1, 0, options.env_action_dim);
  }
  if (stats) {
    if (options.clip_normalized_action) action = action.clamp(-1.0, 1.0);
    const int64_t d = action.size(-1);
    const auto min_v = unpack_aligned_stat(stats->min, d, 0.0, action);
    const auto max_v = unpack_aligned_stat(stats->max, d, 1.0, action);
    const auto denom = max_v - min_v;
    const auto mask = denom != 0;
    const auto safe_denom = torch::where(mask, denom, torch::ones_like(denom));
    const auto inv = (action + 1.0) * 0.5 * safe_denom + min_v;
    action = torch::where(mask, inv, min_v);
  }
  if (options.libero_gripper_action && action.size(-1) >= 7) {
    const auto scaled = action.select(-1, action.size(-1) - 1) * 2.0 - 1.0;
    const auto gripper = options.libero_gripper_binarize ? -torch::sign(scaled) : -scaled;
    action = action.clone();
    action.select(-1, action.size(-1) - 1).copy_(gripper);
  }
  return action;
}

}  // namespace lrhost::policy::groot
