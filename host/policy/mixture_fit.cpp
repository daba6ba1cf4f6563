// A mixture's differences against what the policy honours; see mixture_fit.hpp.
#include "host/policy/mixture_fit.hpp"

#include "host/data/mixture/mixture_dataset.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy {

void check_mixture_fits(const Policy& policy, const data::FrameSource& dataset) {
  const auto* mixture = dynamic_cast<const data::MixtureDataset*>(&dataset);
  if (!mixture || policy.honours_mixture_masks()) return;
  for (const data::MixtureMember& member : mixture->members()) {
    if (!member.missing_cameras.empty())
      throw util::ConfigError("dataset.mixture '" + member.part.name + "' (" + member.part.source +
                                  ") has no camera '" + *member.missing_cameras.begin() + "', and the " +
                                  policy.type() + " policy has no empty cameras to feed in its place",
                              "map one of its cameras onto it with the entry's rename_map, or leave the dataset out");
    for (const auto& [key, width] : mixture->padded_features()) {
      const data::FeatureSpec* own =
          member.dataset ? member.dataset->meta().info.find_feature(member.to_dataset_key.at(key)) : nullptr;
      if (own && own->shape.front() < width)
        throw util::ConfigError("dataset.mixture '" + member.part.name + "' (" + member.part.source + "): '" + key +
                                    "' is " + std::to_string(own->shape.front()) + " wide and the widest dataset's " +
                                    std::to_string(width) + "; the " + policy.type() +
                                    " policy does not pad state/action (smolvla, pi0 and pi05 do)",
                                "train on datasets of one width, or with a policy that pads");
    }
  }
}

}  // namespace lrhost::policy
