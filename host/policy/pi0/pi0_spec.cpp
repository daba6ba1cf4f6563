// pi0's entry in the policy registry (policy_spec.hpp): the entry pi0 and pi05 share
// (pi/pi_spec.hpp) with pi0's config, policy and make_pi0_pre_post_processors' pipeline.
#include "host/policy/pi/pi_spec.hpp"
#include "host/policy/pi0/pi0_config.hpp"
#include "host/policy/pi0/pi0_policy.hpp"

namespace lrhost::policy::pi0 {

const PolicySpec& spec() {
  static const PolicySpec entry =
      pi::make_pi_spec<PI0Config, PI0Policy>(pi::PiVariant::pi0, "pi0", pi0_processor_pipeline());
  return entry;
}

}  // namespace lrhost::policy::pi0
