// pi05's entry in the policy registry (policy_spec.hpp): the entry pi0 and pi05 share
// (pi/pi_spec.hpp) with pi05's config, policy and make_pi05_pre_post_processors' pipeline.
#include "host/policy/pi/pi_spec.hpp"
#include "host/policy/pi05/pi05_config.hpp"
#include "host/policy/pi05/pi05_policy.hpp"

namespace lrhost::policy::pi05 {

const PolicySpec& spec() {
  static const PolicySpec entry =
      pi::make_pi_spec<PI05Config, PI05Policy>(pi::PiVariant::pi05, "pi05", pi05_processor_pipeline());
  return entry;
}

}  // namespace lrhost::policy::pi05
