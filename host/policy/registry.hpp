// The policy registry: maps a config's `type` ("mlp", "act", "diffusion", "smolvla") to its factory.
// The table is explicit (one line per built-in type in registry.cpp) rather than filled by static
// initialisers, which a static library link would silently drop.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "host/policy/policy.hpp"

namespace lrhost::policy {

using PolicyFactory = std::function<std::shared_ptr<Policy>(const nlohmann::json& config, const PolicyFeatures&)>;

// Builds the policy named by config["type"]; unknown types list the registered ones.
std::shared_ptr<Policy> create_policy(const nlohmann::json& config, const PolicyFeatures& features = {});

std::vector<std::string> registered_policy_types();

}  // namespace lrhost::policy
