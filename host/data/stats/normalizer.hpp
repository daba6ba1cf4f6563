// Normalization of features with dataset statistics, as LeRobot's NormalizerProcessorStep and
// UnnormalizerProcessorStep do it (src/lerobot/processor/normalize_processor.py). Policies see
// normalized inputs and emit normalized actions, so a checkpoint trained here is only usable in
// LeRobot (and vice versa) if both sides apply the same formula with the same eps in the same
// dtype; that is why the asymmetries of LeRobot's formulas (MEAN_STD adds eps only when
// normalizing, MIN_MAX and the quantile modes replace a zero range by eps) are kept on purpose.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "host/data/stats/feature_stats.hpp"

namespace lrhost::data {

// LeRobot's NormalizationMode (configs/types.py); names are its enum values.
enum class NormMode { MeanStd, MinMax, Quantiles, Quantile10, Identity };

// "MEAN_STD", "MIN_MAX", "QUANTILES", "QUANTILE10", "IDENTITY"; ConfigError listing them otherwise.
NormMode parse_norm_mode(const std::string& name);
std::string norm_mode_name(NormMode mode);

// LeRobot's default eps of the normalizer steps.
inline constexpr double kNormEps = 1e-8;

// x: floating tensor with leading batch (and time) dims; stats broadcast over its trailing dims
// (vectors [..., n], cameras [..., C, H, W] against [C,1,1]). Stats are cast to x's dtype and device
// first, as LeRobot does. A stat the mode needs but `stats` lacks is a DataError naming it. Identity
// returns x itself.
torch::Tensor normalize(const torch::Tensor& x, const FeatureStats& stats, NormMode mode, double eps = kNormEps);
torch::Tensor unnormalize(const torch::Tensor& x, const FeatureStats& stats, NormMode mode, double eps = kNormEps);

// The stats a mode reads: mean/std, min/max, q01/q99, q10/q90; none for IDENTITY.
std::vector<std::string> stats_needed(NormMode mode);
// DataError naming `feature`, the mode and the missing stats when `stats` lacks one `mode` reads
// (LeRobot raises the same at its first batch). For the quantile modes the hint names the command
// that adds them: `lrhost dataset stats <dataset_root>` (dataset_root empty: "PATH").
void require_norm_stats(const FeatureStats& stats, const std::string& feature, NormMode mode,
                        const std::string& dataset_root = "");

// ImageNet mean/std (3,1,1, float32) written over every listed camera feature's mean/std, creating the
// entry when absent, as use_imagenet_stats=True does in LeRobot's make_dataset (callers leave depth
// cameras out of the list, as LeRobot does).
void apply_imagenet_stats(DatasetStats& stats, const std::vector<std::string>& camera_keys);

}  // namespace lrhost::data
