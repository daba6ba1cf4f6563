// The configuration of the `pi05` policy: LeRobot's PreTrainedConfig base fields followed by
// PI05Config's fields (policies/pi05/configuration_pi05.py, LeRobot 0.6.1) in its dataclass order and
// with its defaults (fields PI05Config redeclares, n_obs_steps and device, keep the base's position, as
// the dataclass does; tokenizer_max_length is declared twice and sits where it is first declared),
// read strictly from a recipe table or a config.json and written back as config.json. The fields are
// PI0Config's but for tokenizer_max_length (200) and QUANTILES normalization. Validation is LeRobot's
// __post_init__ / validate_features (pi_config_checks.hpp); options lrhost does not implement are
// errors that say so. Also pi05's processor pipelines (make_pi05_pre_post_processors).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/policy/config_fields.hpp"
#include "host/policy/pi/pi_config_fields.hpp"
#include "host/policy/processor_pipeline.hpp"

namespace lrhost::policy::pi05 {

struct PI05Config : pi::PiConfigFields {
  // PI05Config's own defaults of the shared fields.
  PI05Config() {
    tokenizer_max_length = 200;
    normalization_mapping = {{"VISUAL", "IDENTITY"}, {"STATE", "QUANTILES"}, {"ACTION", "QUANTILES"}};
  }
  template <class Self, class F>
  static void fields(Self& c, F&& f) {
    pi_fields(c, f, TokenizerLengthAt::after_empty_cameras);
  }
  bool operator==(const PI05Config&) const = default;

  // Reads every field strictly (unknown keys and wrong types are ConfigErrors naming the key).
  // Features come from the table when non-empty, else from `dataset_features`; then validate_features
  // (empty cameras, padded state/action when absent) and validate().
  static PI05Config from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features = {});
  nlohmann::ordered_json to_json() const;
  // to_json plus lrhost's own fields (geometry, tokenizer_name): a recipe's policy table.
  nlohmann::ordered_json to_recipe_json() const;
  static const std::vector<std::string>& weight_shape_fields();
  // LeRobot's checks and lrhost's limits; throws util::ConfigError or util::NotImplemented.
  void validate() const;
};

// make_pi05_pre_post_processors: rename -> to_batch -> relative_actions -> normalizer (step 3) ->
// pi05_prepare_state_tokenizer (the prompt from the normalized state) -> tokenizer -> device;
// unnormalizer -> absolute_actions -> device.
ProcessorPipeline pi05_processor_pipeline();

}  // namespace lrhost::policy::pi05
