// LeRobot's normalize/unnormalize formulas (normalize_processor.py, _NormalizationMixin._apply_transform)
// on torch tensors. The formulas are written in LeRobot's operation order, each step a separate
// rounding in x's dtype, so results are bitwise what LeRobot computes on the same device; the only
// difference is that intermediate results are reused in place instead of allocating a tensor per step.
#include "host/data/stats/normalizer.hpp"

#include "host/util/error.hpp"

namespace lrhost::data {
namespace {

using util::ConfigError;
using util::DataError;

struct ModeName {
  NormMode mode;
  const char* name;
};
constexpr ModeName kModes[] = {{NormMode::MeanStd, "MEAN_STD"},
                               {NormMode::MinMax, "MIN_MAX"},
                               {NormMode::Quantiles, "QUANTILES"},
                               {NormMode::Quantile10, "QUANTILE10"},
                               {NormMode::Identity, "IDENTITY"}};

// What adds missing stats for `mode`; the quantile modes have a command of their own.
std::string missing_stats_hint(NormMode mode, const std::string& dataset_root) {
  if (mode == NormMode::Quantiles || mode == NormMode::Quantile10)
    return "add the quantile stats with `lrhost dataset stats " + (dataset_root.empty() ? "PATH" : dataset_root) +
           "` (LeRobot: augment_dataset_quantile_stats.py), or normalize this feature with MEAN_STD";
  return "recompute the dataset statistics, or choose another normalization mode for this feature";
}

// The stat LeRobot would read, converted to x's dtype and device (its to(dtype=tensor.dtype)).
torch::Tensor stat_like(const FeatureStats& stats, const std::string& name, const torch::Tensor& x, NormMode mode) {
  if (!stats.has(name)) {
    std::string present;
    for (const auto& n : stats.names()) present += (present.empty() ? "" : ", ") + n;
    throw DataError(norm_mode_name(mode) + " normalization needs stat '" + name +
                        "', which is missing (present: " + (present.empty() ? "none" : present) + ")",
                    missing_stats_hint(mode, ""));
  }
  return stats.get(name).to(x.device(), x.scalar_type());
}

void require_floating(const torch::Tensor& x) {
  if (!torch::isFloatingType(x.scalar_type()))
    throw DataError("normalization needs a floating-point tensor, got " + std::string(c10::toString(x.scalar_type())),
                    "convert camera frames to float in [0,1] first");
}

// Lower and upper bound stat names of the range-based modes.
std::pair<const char*, const char*> range_stats(NormMode mode) {
  switch (mode) {
    case NormMode::MinMax:
      return {"min", "max"};
    case NormMode::Quantiles:
      return {"q01", "q99"};
    case NormMode::Quantile10:
      return {"q10", "q90"};
    default:
      return {nullptr, nullptr};
  }
}

// hi - lo with exact zeros replaced by eps (LeRobot's torch.where(denom == 0, eps, denom)).
torch::Tensor range_denominator(const torch::Tensor& lo, const torch::Tensor& hi, double eps) {
  torch::Tensor denom = hi - lo;
  return denom.masked_fill_(denom == 0, eps);
}

}  // namespace

NormMode parse_norm_mode(const std::string& name) {
  for (const auto& m : kModes)
    if (name == m.name) return m.mode;
  std::string valid;
  for (const auto& m : kModes) valid += (valid.empty() ? "" : ", ") + std::string(m.name);
  throw ConfigError("unknown normalization mode '" + name + "' (valid: " + valid + ")",
                    "normalization modes are upper case, e.g. MEAN_STD");
}

std::string norm_mode_name(NormMode mode) {
  for (const auto& m : kModes)
    if (m.mode == mode) return m.name;
  return "UNKNOWN";
}

torch::Tensor normalize(const torch::Tensor& x, const FeatureStats& stats, NormMode mode, double eps) {
  if (mode == NormMode::Identity) return x;
  require_floating(x);
  if (mode == NormMode::MeanStd) {
    torch::Tensor mean = stat_like(stats, "mean", x, mode);
    torch::Tensor std = stat_like(stats, "std", x, mode);
    torch::Tensor out = x - mean;  // (x - mean) / (std + eps); std may alias the stored stat, so no add_
    return out.div_(std + eps);
  }
  auto [lo_name, hi_name] = range_stats(mode);
  torch::Tensor lo = stat_like(stats, lo_name, x, mode);
  torch::Tensor hi = stat_like(stats, hi_name, x, mode);
  torch::Tensor denom = range_denominator(lo, hi, eps);
  torch::Tensor out = x - lo;  // 2 * (x - lo) / denom - 1
  return out.mul_(2).div_(denom).sub_(1);
}

torch::Tensor unnormalize(const torch::Tensor& x, const FeatureStats& stats, NormMode mode, double eps) {
  if (mode == NormMode::Identity) return x;
  require_floating(x);
  if (mode == NormMode::MeanStd) {
    torch::Tensor mean = stat_like(stats, "mean", x, mode);
    torch::Tensor std = stat_like(stats, "std", x, mode);
    torch::Tensor out = x * std;  // x * std + mean (LeRobot adds no eps on the way back)
    return out.add_(mean);
  }
  auto [lo_name, hi_name] = range_stats(mode);
  torch::Tensor lo = stat_like(stats, lo_name, x, mode);
  torch::Tensor hi = stat_like(stats, hi_name, x, mode);
  torch::Tensor denom = range_denominator(lo, hi, eps);
  torch::Tensor out = x + 1;
  if (mode == NormMode::MinMax) return out.div_(2).mul_(denom).add_(lo);  // (x + 1) / 2 * denom + min
  return out.mul_(denom).div_(2).add_(lo);                                // (x + 1) * denom / 2 + q_lo
}

std::vector<std::string> stats_needed(NormMode mode) {
  if (mode == NormMode::Identity) return {};
  if (mode == NormMode::MeanStd) return {"mean", "std"};
  auto [lo, hi] = range_stats(mode);
  return {lo, hi};
}

void require_norm_stats(const FeatureStats& stats, const std::string& feature, NormMode mode,
                        const std::string& dataset_root) {
  std::string missing;
  for (const auto& name : stats_needed(mode))
    if (!stats.has(name)) missing += (missing.empty() ? "" : ", ") + name;
  if (missing.empty()) return;
  std::string present;
  for (const auto& n : stats.names()) present += (present.empty() ? "" : ", ") + n;
  throw DataError("feature '" + feature + "': " + norm_mode_name(mode) + " normalization needs stats " + missing +
                      ", which the dataset's stats lack (present: " + (present.empty() ? "none" : present) + ")",
                  missing_stats_hint(mode, dataset_root));
}

void apply_imagenet_stats(DatasetStats& stats, const std::vector<std::string>& camera_keys) {
  // IMAGENET_STATS of lerobot/utils/constants.py, stored as torch.float32 like make_dataset does.
  const auto mean = torch::tensor({0.485f, 0.456f, 0.406f}, torch::kFloat32).reshape({3, 1, 1});
  const auto std = torch::tensor({0.229f, 0.224f, 0.225f}, torch::kFloat32).reshape({3, 1, 1});
  for (const auto& key : camera_keys) {
    FeatureStats& s = stats[key];
    s.mean = mean.clone();
    s.std = std.clone();
  }
}

}  // namespace lrhost::data
