// Prefix/suffix attention masks and positions (see prefix_suffix_masks.hpp), as LeRobot's
// vla_utils.py computes them.
#include "host/policy/common/prefix_suffix_masks.hpp"

#include "host/util/error.hpp"

namespace lrhost::policy::common {
namespace {

void check_token_flags(const torch::Tensor& pad_masks, const torch::Tensor& att_masks, const char* function) {
  if (pad_masks.dim() != 2 || att_masks.dim() != 2)
    throw util::DataError(std::string(function) + ": pad and att masks must both be (batch, tokens), got " +
                          c10::str(pad_masks.sizes()) + " and " + c10::str(att_masks.sizes()));
}

}  // namespace

torch::Tensor make_att_2d_masks(const torch::Tensor& pad_masks, const torch::Tensor& att_masks) {
  check_token_flags(pad_masks, att_masks, "make_att_2d_masks");
  auto cumsum = att_masks.cumsum(1);
  auto att_2d = cumsum.unsqueeze(1) <= cumsum.unsqueeze(2);
  auto pad_2d = pad_masks.unsqueeze(1).logical_and(pad_masks.unsqueeze(2));
  return att_2d.logical_and(pad_2d);
}

torch::Tensor positions_from_pad_masks(const torch::Tensor& pad_masks) {
  return pad_masks.cumsum(1) - 1;
}

torch::Tensor suffix_attention_mask(const torch::Tensor& prefix_pad_masks, const torch::Tensor& suffix_pad_masks,
                                    const torch::Tensor& suffix_att_masks) {
  if (prefix_pad_masks.dim() != 2 || prefix_pad_masks.size(0) != suffix_pad_masks.size(0))
    throw util::DataError("suffix_attention_mask: prefix pad mask " + c10::str(prefix_pad_masks.sizes()) +
                          " must be (batch, tokens) with the suffix's batch " + c10::str(suffix_pad_masks.sizes()));
  const int64_t batch = prefix_pad_masks.size(0), prefix_length = prefix_pad_masks.size(1);
  const int64_t suffix_length = suffix_pad_masks.size(1);
  auto prefix_2d = prefix_pad_masks.unsqueeze(1).expand({batch, suffix_length, prefix_length});
  auto suffix_2d = make_att_2d_masks(suffix_pad_masks, suffix_att_masks);
  return torch::cat({prefix_2d, suffix_2d}, 2);
}

torch::Tensor suffix_positions(const torch::Tensor& prefix_pad_masks, const torch::Tensor& suffix_pad_masks) {
  const auto prefix_offsets = prefix_pad_masks.sum(-1).unsqueeze(1);
  return prefix_offsets + suffix_pad_masks.cumsum(1) - 1;
}

}  // namespace lrhost::policy::common
