// Assignment of parameters to DDP gradient buckets, as PyTorch's DDP does: walk the parameters
// in reverse order (the order backward tends to produce gradients), start a new bucket when the
// current one would exceed its cap (a small first bucket so communication starts early, then the
// regular cap), and never mix dtypes or devices in one bucket.
#pragma once
#include <torch/torch.h>

#include <cstddef>
#include <vector>

namespace lrhost::dist {

struct BucketCaps {
  std::size_t first_bytes = 1u << 20;  // 1 MiB
  std::size_t bytes = 25u << 20;       // 25 MiB
};

// Buckets as lists of parameter indices, in launch order.
std::vector<std::vector<std::size_t>> plan_buckets(const std::vector<torch::Tensor>& params, const BucketCaps& caps);

}  // namespace lrhost::dist
