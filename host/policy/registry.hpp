// The policy registry: the specs of the built-in policy types (policy_spec.hpp), one line per type in
// registry.cpp, and lookup by a config's `type`. The table is explicit rather than filled by static
// initialisers, which a static library link would silently drop.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "host/policy/policy.hpp"
#include "host/policy/policy_spec.hpp"

namespace lrhost::policy {

// Every built-in spec, sorted by type name.
const std::vector<const PolicySpec*>& policy_specs();
// The spec of `type`; ConfigError naming the registered types when there is none.
const PolicySpec& policy_spec(const std::string& type);
// The same, or null.
const PolicySpec* find_policy_spec(const std::string& type);

// Builds the policy named by config["type"]; unknown types list the registered ones.
std::shared_ptr<Policy> create_policy(const nlohmann::json& config, const PolicyFeatures& features = {});

std::vector<std::string> registered_policy_types();

// What trains `type` from the shipped recipes, for messages that send the user to it: "recipes/act_ddp.lua
// trains 'act'" (the recipe lerobot-train's --policy.type=<type> picks), or, for a type no shipped recipe
// trains, a recipe of one's own built with lr.policy.defaults("<type>"); for an unknown type, the known ones.
std::string recipe_that_trains(const std::string& type);

}  // namespace lrhost::policy
