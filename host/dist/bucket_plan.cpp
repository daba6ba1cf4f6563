// Reverse-order, size-capped bucket assignment.
#include "host/dist/bucket_plan.hpp"

namespace lrhost::dist {

std::vector<std::vector<std::size_t>> plan_buckets(const std::vector<torch::Tensor>& params, const BucketCaps& caps) {
  std::vector<std::vector<std::size_t>> buckets;
  std::size_t bucket_bytes = 0;
  for (std::size_t k = params.size(); k-- > 0;) {
    const auto& p = params[k];
    std::size_t bytes = static_cast<std::size_t>(p.numel()) * p.element_size();
    // The cap of the bucket being filled: the first one is small so its all-reduce starts early.
    std::size_t cap = buckets.size() == 1 ? caps.first_bytes : caps.bytes;
    bool start_new = buckets.empty();
    if (!start_new) {
      const auto& first = params[buckets.back().front()];
      bool compatible = first.scalar_type() == p.scalar_type() && first.device() == p.device();
      start_new = !compatible || bucket_bytes + bytes > cap;
    }
    if (start_new) {
      buckets.emplace_back();
      bucket_bytes = 0;
    }
    buckets.back().push_back(k);
    bucket_bytes += bytes;
  }
  return buckets;
}

}  // namespace lrhost::dist
