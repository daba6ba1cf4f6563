// The `pi0` policy (LeRobot 0.6.1 PI0Policy): everything but its type and config.json is pi0/pi05's
// shared PiPolicy (host/policy/pi/pi_policy.hpp) with the pi0 variant of the model.
#pragma once
#include "host/policy/pi/pi_policy.hpp"
#include "host/policy/pi0/pi0_config.hpp"

namespace lrhost::policy::pi0 {

class PI0Policy : public pi::PiPolicy {
 public:
  explicit PI0Policy(PI0Config config, std::optional<pi::PiGeometry> geometry = std::nullopt)
      : PiPolicy(pi::PiVariant::pi0, config, std::move(geometry)), config_(std::move(config)) {}

  std::string type() const override { return "pi0"; }
  nlohmann::ordered_json config() const override { return config_.to_json(); }

 private:
  PI0Config config_;
};

}  // namespace lrhost::policy::pi0
