// The mixture as a user checks it before and while training (`lrhost dataset info @mix.json`,
// `lrhost show`, the run's log): each dataset's frames, episodes, fps, effective share of the draws,
// the passes over it that a run's samples make, the cameras it lacks, and the features padded.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host/data/mixture/mixture_dataset.hpp"

namespace lrhost::data {

// One line per fact; `samples` (steps x effective batch) adds the expected passes over each dataset.
std::vector<std::string> mixture_report(const MixtureDataset& mixture, std::optional<int64_t> samples = std::nullopt);

}  // namespace lrhost::data
