// PI0 config: strict reading, LeRobot's validation, config.json output, and the pipeline shape.
#include "host/policy/pi0/pi0_config.hpp"

#include "host/policy/pi/pi_config_fields.hpp"

namespace lrhost::policy::pi0 {

PI0Config PI0Config::from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features) {
  return pi::read_pi_config<PI0Config>(table, "pi0", dataset_features);
}

void PI0Config::validate() const {
  pi::validate_pi_config(*this, "policy 'pi0'");
}

nlohmann::ordered_json PI0Config::to_json() const {
  return write_config_fields(*this, "pi0");
}

nlohmann::ordered_json PI0Config::to_recipe_json() const {
  return write_config_fields(*this, "pi0", /*with_lrhost_only=*/true);
}

const std::vector<std::string>& PI0Config::weight_shape_fields() {
  static const std::vector<std::string> fields = config_field_names<PI0Config>(&FieldTraits::shapes_weights);
  return fields;
}

ProcessorPipeline pi0_processor_pipeline() {
  using Kind = ProcessorStepKind;
  return {{{"rename_observations_processor", Kind::rename},
           {"to_batch_processor", Kind::to_batch},
           {"pi0_new_line_processor", Kind::task_new_line},
           {"tokenizer_processor", Kind::tokenizer},
           {"device_processor", Kind::device},
           {"relative_actions_processor", Kind::relative_actions},
           {"normalizer_processor", Kind::normalizer}},
          {{"unnormalizer_processor", Kind::unnormalizer},
           {"absolute_actions_processor", Kind::absolute_actions},
           {"device_processor", Kind::device}}};
}

}  // namespace lrhost::policy::pi0
