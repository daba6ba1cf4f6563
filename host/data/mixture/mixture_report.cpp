// Describing a mixture; see mixture_report.hpp.
#include "host/data/mixture/mixture_report.hpp"

#include <fmt/format.h>

namespace lrhost::data {

std::vector<std::string> mixture_report(const MixtureDataset& mixture, std::optional<int64_t> samples) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("dataset mixture (weighting {}, stats {}): {} datasets, {} frames",
                              weighting_name(mixture.spec().weighting),
                              mixture.spec().stats == MixtureStats::per_dataset ? "per_dataset" : "pooled",
                              mixture.members().size(), mixture.size()));
  for (const MixtureMember& member : mixture.members()) {
    const int64_t frames = member.dataset ? member.dataset->size() : 0;
    const int64_t episodes = member.dataset ? static_cast<int64_t>(member.dataset->episode_indices().size()) : 0;
    std::string line =
        fmt::format("  {:<20} {:>9} frames {:>5} episodes {:>3} fps  share {:5.1f}%", member.part.name, frames,
                    episodes, member.dataset ? member.dataset->meta().info.fps : 0, 100 * member.share);
    if (samples && frames > 0)
      line +=
          fmt::format("  {:.2f} passes", static_cast<double>(*samples) * member.share / static_cast<double>(frames));
    if (member.part.source != member.part.name) line += "  (" + member.part.source + ")";
    for (const std::string& camera : member.missing_cameras) line += ", no " + camera;
    lines.push_back(line);
  }
  for (const auto& [key, width] : mixture.padded_features())
    lines.push_back(
        fmt::format("  {} zero-padded to the widest, {} (padded dimensions masked out of the loss)", key, width));
  return lines;
}

}  // namespace lrhost::data
