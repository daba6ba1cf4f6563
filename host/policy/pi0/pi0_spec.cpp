// pi0's entry in the policy registry (policy_spec.hpp): config defaults, weight-shape fields and
// make_pi0_pre_post_processors' pipeline. The model is not built yet (issue 33): create() fails
// loudly instead of returning a stand-in, and there is no lerobot-train mapping until a recipe exists.
#include "host/policy/policy_spec.hpp"
#include "host/policy/pi0/pi0_config.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::pi0 {

const PolicySpec& spec() {
  static const PolicySpec entry{
      .type = "pi0",
      .create = [](const nlohmann::json& config, const PolicyFeatures& features) -> std::shared_ptr<Policy> {
        PI0Config::from_json(config, features);  // config errors first, as for the built policies
        throw util::NotImplemented("policy 'pi0': the model is not built yet (issue 33)");
      },
      .default_config = [] { return PI0Config{}.to_json(); },
      .weight_shape_fields = PI0Config::weight_shape_fields(),
      .processors = pi0_processor_pipeline(),
      // The planned FSDP units of the model to come: one PaliGemma/expert layer pair (the two Gemma
      // layers that share one attention per layer index) and SigLIP's encoder layer.
      .fsdp_wrap_module_types = {"PiGemmaLayerPair", "SiglipEncoderLayer"},
  };
  return entry;
}

}  // namespace lrhost::policy::pi0
