// PI05 config: strict reading, LeRobot's validation, config.json output, and the pipeline shape.
#include "host/policy/pi05/pi05_config.hpp"

#include "host/policy/pi/pi_config_fields.hpp"

namespace lrhost::policy::pi05 {

PI05Config PI05Config::from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features) {
  return pi::read_pi_config<PI05Config>(table, "pi05", dataset_features);
}

void PI05Config::validate() const {
  pi::validate_pi_config(*this, "policy 'pi05'");
}

nlohmann::ordered_json PI05Config::to_json() const {
  return write_config_fields(*this, "pi05");
}

nlohmann::ordered_json PI05Config::to_recipe_json() const {
  return write_config_fields(*this, "pi05", /*with_lrhost_only=*/true);
}

const std::vector<std::string>& PI05Config::weight_shape_fields() {
  static const std::vector<std::string> fields = config_field_names<PI05Config>(&FieldTraits::shapes_weights);
  return fields;
}

ProcessorPipeline pi05_processor_pipeline() {
  using Kind = ProcessorStepKind;
  return {{{"rename_observations_processor", Kind::rename},
           {"to_batch_processor", Kind::to_batch},
           {"relative_actions_processor", Kind::relative_actions},
           {"normalizer_processor", Kind::normalizer},
           {"pi05_prepare_state_tokenizer_processor_step", Kind::state_prompt},
           {"tokenizer_processor", Kind::tokenizer},
           {"device_processor", Kind::device}},
          {{"unnormalizer_processor", Kind::unnormalizer},
           {"absolute_actions_processor", Kind::absolute_actions},
           {"device_processor", Kind::device}}};
}

}  // namespace lrhost::policy::pi05
