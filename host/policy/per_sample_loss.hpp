// Each sample's loss in a training batch, as a loss part (PolicyOutput::parts[kPerSampleLoss], [B],
// detached): the mean of that sample's own loss elements, weighted as the policy's mean weights them.
// A training loop averages it over the samples of each dataset of a mixture (loss/<name>).
#pragma once
#include <torch/types.h>

namespace lrhost::policy {

inline constexpr const char* kPerSampleLoss = "loss_per_sample";

// elements [B, ...]; weights (optional) broadcastable to it, 0 where an element does not count.
torch::Tensor per_sample_mean(const torch::Tensor& elements, const torch::Tensor& weights = {});

}  // namespace lrhost::policy
