// The checks and feature completion that LeRobot 0.6.1's PI0Config and PI05Config share
// (configuration_pi0.py / configuration_pi05.py: the same __post_init__ and validate_features), written
// once for both config structs, plus the limits lrhost adds while it does not implement an option.
#pragma once
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "host/policy/policy_features.hpp"
#include "host/util/error.hpp"

namespace lrhost::policy::pi {

// validate_features: each empty camera becomes a VISUAL input (3, *image_resolution), and a missing
// observation.state / action is declared at the padded size (max_state_dim / max_action_dim).
template <class Config>
void complete_pi_features(Config& c) {
  auto has = [](const std::vector<PolicyFeature>& list, const std::string& key) {
    return std::any_of(list.begin(), list.end(), [&](const PolicyFeature& f) { return f.key == key; });
  };
  for (int64_t i = 0; i < c.empty_cameras; ++i) {
    std::string key = "observation.images.empty_camera_" + std::to_string(i);
    if (!has(c.input_features, key))
      c.input_features.push_back({key, "VISUAL", {3, c.image_resolution[0], c.image_resolution[1]}});
  }
  if (!has(c.input_features, "observation.state"))
    c.input_features.push_back({"observation.state", "STATE", {c.max_state_dim}});
  if (!has(c.output_features, "action")) c.output_features.push_back({"action", "ACTION", {c.max_action_dim}});
}

// __post_init__ (n_action_steps <= chunk_size; the variant and dtype names are one_of traits of the
// field list) and what lrhost refuses rather than running differently.
template <class Config>
void validate_pi_config(const Config& c, const std::string& where) {
  auto fail = [&](const std::string& message, const std::string& hint = {}) {
    throw util::ConfigError(where + ": " + message, hint);
  };
  if (c.n_action_steps > c.chunk_size)
    fail("'n_action_steps' (" + std::to_string(c.n_action_steps) + ") cannot be greater than 'chunk_size' (" +
         std::to_string(c.chunk_size) + ")");
  auto positive = [&](const char* key, int64_t value) {
    if (value <= 0) fail(std::string("'") + key + "' must be a positive integer, got " + std::to_string(value));
  };
  positive("chunk_size", c.chunk_size);
  positive("n_action_steps", c.n_action_steps);
  positive("max_state_dim", c.max_state_dim);
  positive("max_action_dim", c.max_action_dim);
  positive("num_inference_steps", c.num_inference_steps);
  positive("tokenizer_max_length", c.tokenizer_max_length);
  positive("image_resolution[0]", c.image_resolution[0]);
  positive("image_resolution[1]", c.image_resolution[1]);
  if (c.empty_cameras < 0) fail("'empty_cameras' must be >= 0, got " + std::to_string(c.empty_cameras));
  if (c.optimizer_betas.size() != 2) fail("'optimizer_betas' must be two numbers [beta1, beta2]");
  if (!c.relative_exclude_joints) fail("'relative_exclude_joints' must be a list of joint names");
  // The relative/absolute action steps need the state of the preprocessor call in the postprocessor
  // (LeRobot's AbsoluteActionsProcessorStep reads the relative step's cached state): not built yet.
  if (c.use_relative_actions)
    throw util::NotImplemented(where +
                               ": 'use_relative_actions' = true (relative_actions_processor) is not implemented "
                               "in lrhost; use false");
  if (c.compile_model)
    throw util::NotImplemented(where + ": 'compile_model' = true (torch.compile) is not implemented in lrhost");
  for (const auto* feature : {c.robot_state_feature(), c.action_feature()})
    if (feature && feature->shape.size() != 1)
      fail("'" + feature->key + "' must be a vector feature (shape [n]), got " + nlohmann::json(feature->shape).dump());
  if (const auto* state = c.robot_state_feature();
      state && state->shape.size() == 1 && state->shape[0] > c.max_state_dim)
    fail("'observation.state' has " + std::to_string(state->shape[0]) +
             " dimensions, more than 'max_state_dim' = " + std::to_string(c.max_state_dim),
         "LeRobot pads the state to max_state_dim and never truncates; raise max_state_dim");
  if (const auto* action = c.action_feature();
      action && action->shape.size() == 1 && action->shape[0] > c.max_action_dim)
    fail("'action' has " + std::to_string(action->shape[0]) +
             " dimensions, more than 'max_action_dim' = " + std::to_string(c.max_action_dim),
         "LeRobot pads actions to max_action_dim and never truncates; raise max_action_dim");
}

}  // namespace lrhost::policy::pi
