// Entering and leaving LibTorch's autocast state, restoring whatever was set before.
#include "host/nn/autocast.hpp"

#include <ATen/autocast_mode.h>

namespace lrhost::nn {

AutocastGuard::AutocastGuard(const std::optional<AutocastSpec>& spec) : spec_(spec) {
  if (!spec_) return;
  previous_enabled_ = at::autocast::is_autocast_enabled(spec_->device);
  previous_dtype_ = at::autocast::get_autocast_dtype(spec_->device);
  at::autocast::set_autocast_enabled(spec_->device, true);
  at::autocast::set_autocast_dtype(spec_->device, spec_->dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!spec_) return;
  // Casts are cached while autocast is active; the cache must be dropped when the outermost
  // region ends, as torch.autocast's __exit__ does.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(spec_->device, previous_enabled_);
  at::autocast::set_autocast_dtype(spec_->device, previous_dtype_);
}

}  // namespace lrhost::nn
