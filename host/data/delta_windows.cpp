// Delta-timestamp resolution and window clamping; see delta_windows.hpp.
#include "host/data/delta_windows.hpp"

#include <cmath>
#include <sstream>

#include "host/util/error.hpp"

namespace lrhost::data {

DeltaIndices resolve_delta_timestamps(const DeltaTimestamps& deltas, const DatasetInfo& info, double tolerance_s) {
  DeltaIndices indices;
  const double fps = info.fps;
  for (const auto& [key, seconds] : deltas) {
    const FeatureSpec& feature = info.feature(key);  // DataError listing the features
    if (feature.kind == FeatureKind::Text)
      throw util::ConfigError("delta_timestamps['" + key + "']: text features have no frames to window");
    if (seconds.empty()) throw util::ConfigError("delta_timestamps['" + key + "'] is empty; give at least one offset");
    std::vector<double> outside;
    std::vector<int64_t> frames;
    for (double delta : seconds) {
      // LeRobot's check_delta_timestamps: |d*fps - round(d*fps)| / fps <= tolerance_s.
      double scaled = delta * fps;
      if (!(std::abs(scaled) < 1e12) || std::abs(scaled - std::nearbyint(scaled)) / fps > tolerance_s)
        outside.push_back(delta);
      frames.push_back(static_cast<int64_t>(std::nearbyint(scaled)));
    }
    if (!outside.empty()) {
      std::ostringstream list;
      for (std::size_t i = 0; i < outside.size(); ++i) list << (i ? ", " : "") << outside[i];
      throw util::ConfigError("delta_timestamps['" + key + "']: " + list.str() + " s are not multiples of 1/" +
                                  std::to_string(info.fps) + " s within tolerance_s=" + std::to_string(tolerance_s),
                              "use offsets k/fps, e.g. " + std::to_string(1.0 / fps) + " for one frame");
    }
    indices[key] = std::move(frames);
  }
  return indices;
}

WindowQuery window_query(int64_t index, int64_t episode_from, int64_t episode_to, const std::vector<int64_t>& offsets) {
  WindowQuery query;
  query.indices.reserve(offsets.size());
  query.is_pad = torch::empty({static_cast<int64_t>(offsets.size())}, torch::kBool);
  bool* pad = query.is_pad.data_ptr<bool>();
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    int64_t target = index + offsets[i];
    pad[i] = target < episode_from || target >= episode_to;
    query.indices.push_back(std::clamp(target, episode_from, episode_to - 1));
  }
  return query;
}

}  // namespace lrhost::data
