// Honouring a mixture's padded dimensions; see padded_dimensions.hpp.
#include "host/data/mixture/padded_dimensions.hpp"

#include <torch/torch.h>

#include "host/util/error.hpp"

namespace lrhost::data {
namespace {

// The mask for `key` shaped [B, 1.., width] against `values` of `dims` dimensions.
torch::Tensor mask_for(const std::map<std::string, torch::Tensor>& batch, const std::string& key, int64_t width,
                       int64_t dims) {
  auto found = batch.find(dim_is_pad_key(key));
  if (found == batch.end()) return {};
  torch::Tensor mask = found->second.to(torch::kBool);
  if (mask.dim() != 2 || mask.size(1) < width)
    throw util::DataError("'" + dim_is_pad_key(key) + "' must be bool [batch, " + std::to_string(width) + "], got " +
                          c10::str(mask.sizes()));
  mask = mask.narrow(1, 0, width);
  while (mask.dim() < dims) mask = mask.unsqueeze(1);
  return mask;
}

}  // namespace

torch::Tensor zero_padded_dimensions(const std::map<std::string, torch::Tensor>& batch, const std::string& key,
                                     const torch::Tensor& values) {
  torch::Tensor mask = mask_for(batch, key, values.size(-1), values.dim());
  if (!mask.defined()) return values;
  return values.masked_fill(mask.to(values.device()), 0);
}

torch::Tensor real_dimension_weights(const std::map<std::string, torch::Tensor>& batch, const std::string& key,
                                     int64_t width) {
  torch::Tensor mask = mask_for(batch, key, width, 3);
  if (!mask.defined()) return {};
  return mask.logical_not().to(torch::kFloat);
}

}  // namespace lrhost::data
