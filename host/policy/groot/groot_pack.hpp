// The numerical parts of GR00T N1.7's processor steps, as plain tensor functions: GrootN17PackInputsStep's
// state / action min/max normalisation with one set of stats (the dataset's; a checkpoint's grouped
// normalisation is groot_checkpoint_stats.hpp's), padding and action mask, its language and embodiment-id
// rules and camera order (sorted, or a checkpoint's video_modality_keys), and
// GrootActionUnpackUnnormalizeStep's inverse (LeRobot 0.6.1, lerobot/policies/groot/processor_groot.py
// and utils.py). Every op runs in the order and dtype LeRobot uses so that results are bit-equal; the
// pipeline plumbing (which keys, which files) is the caller's.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lrhost::policy::groot {

// One key's min/max statistics as the step holds them. An undefined tensor is an absent entry, which
// LeRobot replaces by zeros (min) / ones (max). Any dtype; any length (see the two padding rules below).
struct MinMaxStats {
  torch::Tensor min;
  torch::Tensor max;
};

// The pack step's sizes (make_groot_pre_post_processors: action_horizon = min(chunk_size, 40) and
// valid_action_horizon = action_horizon for a new embodiment; max dims from GrootConfig).
struct GrootPackSizes {
  int64_t max_state_dim = 132;
  int64_t max_action_dim = 132;
  int64_t action_horizon = 40;
  int64_t valid_action_horizon = 40;
  bool clip_outliers = true;  // clamp normalised values to [-1, 1]
};

// The pack step's `_min_max_norm` on x (..., D): stats cast to float32 and truncated / padded to D
// (min with 0, max with 1), y = 2(x - min)/(max - min) - 1, 0 where max == min, then clamped when
// `clip`. x keeps torch's type promotion against the float32 stats (float32 stays float32).
torch::Tensor groot_min_max_normalize(const torch::Tensor& x, const MinMaxStats& stats, bool clip);

// observation.state (B, D) -> state (B, 1, max_state_dim): normalised (when `stats` is non-null;
// LeRobot leaves the state raw when its stats have no observation.state entry) and zero-padded.
torch::Tensor groot_pack_state(const torch::Tensor& state, const MinMaxStats* stats, const GrootPackSizes& sizes);

struct GrootPackedAction {
  torch::Tensor action;       // (B, action_horizon, max_action_dim), action dtype
  torch::Tensor action_mask;  // (B, action_horizon, max_action_dim) float32
};

// action (B, T, D) or (B, D) with optional action_is_pad (B, T) (undefined: none; any dtype, nonzero =
// padded) -> normalised (when `stats` is non-null), zero-padded to max_action_dim and action_horizon,
// rows outside the valid horizon or padded multiplied by 0, and the mask of valid rows on the first D
// dims.
GrootPackedAction groot_pack_action(const torch::Tensor& action, const torch::Tensor& action_is_pad,
                                    const MinMaxStats* stats, const GrootPackSizes& sizes);

// The action_mask (B, action_horizon) float32 the pack step adds when there is no action (inference):
// ones over the first min(valid_action_horizon, action_horizon) steps.
torch::Tensor groot_inference_action_mask(int64_t batch, const GrootPackSizes& sizes, const torch::Device& device);

// `prepare_n1_7_language_batch` (utils.py): the task of each of `batch` samples (one task is
// broadcast; none, or an empty one, becomes "Perform the task."), with `formalize` lower-cased and
// stripped to alphanumerics, whitespace and '_'. The pack step calls it with formalize = true, the VLM
// step again on its output with formalize = false (a task that formalises to "" becomes the
// unformalised "Perform the task." there). Non-ASCII text is refused (DataError): Python's Unicode
// lower() / isalnum() / isspace() are not reproduced.
std::vector<std::string> groot_language_batch(const std::vector<std::string>& tasks, int64_t batch, bool formalize);

// LeRobot's default N1.7 embodiment tags and ids (N1_7_EMBODIMENT_MAPPING), in its order.
const std::vector<std::pair<std::string, int64_t>>& default_embodiment_mapping();

// The id of `embodiment_tag` in LeRobot's default N1.7 mapping (N1_7_EMBODIMENT_MAPPING). LeRobot maps
// an unknown tag to 0 (simpler_env_google's id) silently; this throws a ConfigError naming the tag and
// the known ones instead.
int64_t groot_embodiment_id(const std::string& embodiment_tag);
// embodiment_id (B,) int32 of that id.
torch::Tensor groot_embodiment_ids(const std::string& embodiment_tag, int64_t batch, const torch::Device& device);

// The cameras the pack step feeds, in order, without checkpoint video_modality_keys: every key that
// starts with "observation.images" (a prefix test: "observation.images_x" counts) sorted by code
// point, else {"observation.image"} when present, else none.
std::vector<std::string> groot_camera_order(const std::vector<std::string>& observation_keys);

// The cameras in a checkpoint's video_modality_keys order (_ordered_image_keys, :1563-1621): for each
// key "observation.images.<key>" (for "wrist_image" also "observation.images.image2"), the first
// present; `unmatched` the keys with no camera, `unused` the batch's other cameras (sorted). With no
// "observation.images*" key, {"observation.image"} when present. LeRobot falls back to every camera
// in sorted order when no key matches (warning that the layout is unlikely to be the checkpoint's);
// that is a DataError here, naming both lists.
struct GrootCameraOrder {
  std::vector<std::string> cameras, unmatched, unused;
};
GrootCameraOrder groot_checkpoint_camera_order(const std::vector<std::string>& observation_keys,
                                               const std::vector<std::string>& video_modality_keys);

struct GrootUnpackOptions {
  int64_t env_action_dim = 0;           // 0: keep every dim
  bool clip_normalized_action = true;   // the factory sets it
  bool libero_gripper_action = false;   // config.action_decode_transform == "libero"
  bool libero_gripper_binarize = true;  // the step's default
};

// GrootActionUnpackUnnormalizeStep on a model action (..., D_model): slice to env_action_dim, then
// with non-null `stats` clamp to [-1, 1] and x = (y + 1)·0.5·(max - min) + min (min where max == min),
// the stats cast to the action dtype and, when their length differs, truncated / zero-padded (min AND
// max padded with 0, unlike the pack step); null `stats` (LeRobot's stats None) skips both. Then the
// LIBERO gripper decode of the last dim when it is on and D >= 7: -sign(2g - 1) (binarize) or -(2g - 1).
torch::Tensor groot_unpack_action(const torch::Tensor& action, const MinMaxStats* stats,
                                  const GrootUnpackOptions& options);

}  // namespace lrhost::policy::groot
