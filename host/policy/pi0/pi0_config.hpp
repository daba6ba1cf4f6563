// The configuration of the `pi0` policy: LeRobot's PreTrainedConfig base fields followed by
// PI0Config's fields (policies/pi0/configuration_pi0.py, LeRobot 0.6.1) in its dataclass order and with
// its defaults (fields PI0Config redeclares, n_obs_steps and device, keep the base's position, as the
// dataclass does), read strictly from a recipe table or a config.json and written back as config.json.
// Validation is LeRobot's __post_init__ / validate_features (pi_config_checks.hpp); options lrhost does
// not implement (relative actions, real-time chunking, torch.compile) are errors that say so. Also
// pi0's processor pipelines (make_pi0_pre_post_processors).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/policy/config_fields.hpp"
#include "host/policy/pi/pi_config_fields.hpp"
#include "host/policy/processor_pipeline.hpp"

namespace lrhost::policy::pi0 {

struct PI0Config : pi::PiConfigFields {
  template <class Self, class F>
  static void fields(Self& c, F&& f) {
    pi_fields(c, f, TokenizerLengthAt::last);
  }
  bool operator==(const PI0Config&) const = default;

  // Reads every field strictly (unknown keys and wrong types are ConfigErrors naming the key).
  // Features come from the table when non-empty, else from `dataset_features`; then validate_features
  // (empty cameras, padded state/action when absent) and validate().
  static PI0Config from_json(const nlohmann::json& table, const PolicyFeatures& dataset_features = {});
  nlohmann::ordered_json to_json() const;
  // to_json plus lrhost's own fields (geometry, tokenizer_name): a recipe's policy table.
  nlohmann::ordered_json to_recipe_json() const;
  static const std::vector<std::string>& weight_shape_fields();
  // LeRobot's checks and lrhost's limits; throws util::ConfigError or util::NotImplemented.
  void validate() const;
};

// make_pi0_pre_post_processors: rename -> to_batch -> pi0_new_line -> tokenizer -> device ->
// relative_actions -> normalizer (step 6); unnormalizer -> absolute_actions -> device.
ProcessorPipeline pi0_processor_pipeline();

}  // namespace lrhost::policy::pi0
