// The `pi05` policy (LeRobot 0.6.1 PI05Policy): everything but its type and config.json is pi0/pi05's
// shared PiPolicy (host/policy/pi/pi_policy.hpp) with the pi05 variant of the model.
#pragma once
#include "host/policy/pi/pi_policy.hpp"
#include "host/policy/pi05/pi05_config.hpp"

namespace lrhost::policy::pi05 {

class PI05Policy : public pi::PiPolicy {
 public:
  explicit PI05Policy(PI05Config config, std::optional<pi::PiGeometry> geometry = std::nullopt)
      : PiPolicy(pi::PiVariant::pi05, config, std::move(geometry)), config_(std::move(config)) {}

  std::string type() const override { return "pi05"; }
  nlohmann::ordered_json config() const override { return config_.to_json(); }

 private:
  PI05Config config_;
};

}  // namespace lrhost::policy::pi05
