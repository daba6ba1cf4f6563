// The per-sample masks a mixture adds to its batches (mixture_dataset.hpp), read by the steps that
// must honour them: `<key>_dim_is_pad` (bool [B, width], true on a dimension a narrower dataset's
// state/action was zero-padded with) and `<camera>_padding_mask` (bool [B], false where the sample's
// dataset has no such camera: SmolVLA's own key for a camera to mask out, LeRobot's name for it),
// and with per-dataset stats `dataset_index` (int64 [B], the sample's dataset in the mixture, as
// LeRobot's MultiLeRobotDataset names it), which picks the stats that normalize the sample.
#pragma once
#include <torch/types.h>

#include <map>
#include <string>

namespace lrhost::data {

inline constexpr const char* kDatasetIndexKey = "dataset_index";

inline std::string dim_is_pad_key(const std::string& key) {
  return key + "_dim_is_pad";
}
inline std::string camera_padding_mask_key(const std::string& camera) {
  return camera + "_padding_mask";
}

// `values` ([B, width] or [B, T, width]) with the padded dimensions set to 0, so that they are zero
// after normalization as they were before it; unchanged when the batch has no mask for `key`.
torch::Tensor zero_padded_dimensions(const std::map<std::string, torch::Tensor>& batch, const std::string& key,
                                     const torch::Tensor& values);

// 1 on real dimensions and 0 on padded ones, shaped to multiply per-element losses [B, T, width];
// an undefined tensor when the batch has no mask for `key` (nothing is padded).
torch::Tensor real_dimension_weights(const std::map<std::string, torch::Tensor>& batch, const std::string& key,
                                     int64_t width);

}  // namespace lrhost::data
