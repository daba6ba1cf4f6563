// Reading a recipe's ema table and the decay rule; see ema_settings.hpp.
#include "host/optim/ema_settings.hpp"

#include <algorithm>
#include <cmath>

#include "host/config/config_reader.hpp"
#include "host/util/error.hpp"

namespace lrhost::optim {
namespace {

constexpr double kNoDecay = -1;  // the table's "none" (LeRobot's decay = None)
constexpr double kDefaultMin = 0.0, kDefaultMax = 0.9999;

std::string number_text(double value) {
  return nlohmann::json(value).dump();
}

}  // namespace

EmaSettings EmaSettings::read(const nlohmann::json& table, const std::string& where) {
  if (!table.is_object())
    throw util::ConfigError(where + ": expected a table {enable =, decay =, ...}, got " + table.dump());
  config::ConfigReader reader(table, where);
  EmaSettings s;
  s.enable = reader.boolean("enable", false);
  const double decay = reader.number("decay", kNoDecay);
  s.update_after_step = reader.integer("update_after_step", 0);
  s.inv_gamma = reader.number("inv_gamma", 1.0);
  s.power = reader.number("power", 0.75);
  s.min_decay = reader.number("min_decay", kDefaultMin);
  s.max_decay = reader.number("max_decay", kDefaultMax);
  s.use_for_eval = reader.boolean("use_for_eval", true);
  s.on_main_only = reader.boolean("on_main_only", false);
  reader.reject_unknown();
  // LeRobot main's EMAConfig.__post_init__, in its order and with its words.
  if (!(0.0 <= s.min_decay && s.min_decay <= s.max_decay && s.max_decay <= 1.0))
    throw util::ConfigError(where + ": expected 0 <= min_decay <= max_decay <= 1, got min_decay=" +
                            number_text(s.min_decay) + " and max_decay=" + number_text(s.max_decay));
  if (!(s.inv_gamma > 0))
    throw util::ConfigError(where + ".inv_gamma must be positive, got " + number_text(s.inv_gamma));
  if (!(s.power > 0)) throw util::ConfigError(where + ".power must be positive, got " + number_text(s.power));
  if (s.update_after_step < 0)
    throw util::ConfigError(where + ".update_after_step must be >= 0, got " + std::to_string(s.update_after_step));
  if (decay != kNoDecay) {
    if (!(decay >= 0.0 && decay <= 1.0))
      throw util::ConfigError(where + ".decay must be in [0, 1] (or -1: none, the warm-up schedule), got " +
                              number_text(decay));
    if (s.min_decay != kDefaultMin || s.max_decay != kDefaultMax)
      throw util::ConfigError(where +
                              ".decay (constant decay) and min_decay/max_decay (schedule clamp) are mutually "
                              "exclusive: set one or the other");
    s.decay = decay;
  }
  return s;
}

nlohmann::ordered_json EmaSettings::to_json() const {
  return {{"enable", enable},
          {"decay", decay ? nlohmann::ordered_json(*decay) : nlohmann::ordered_json(nullptr)},
          {"update_after_step", update_after_step},
          {"inv_gamma", inv_gamma},
          {"power", power},
          {"min_decay", min_decay},
          {"max_decay", max_decay},
          {"use_for_eval", use_for_eval},
          {"on_main_only", on_main_only}};
}

nlohmann::ordered_json default_ema_table() {
  const EmaSettings s;
  auto table = s.to_json();
  table["decay"] = kNoDecay;
  return table;
}

double ema_decay(const EmaSettings& settings, int64_t optimization_step) {
  const int64_t s = std::max<int64_t>(0, optimization_step - settings.update_after_step - 1);
  if (s <= 0) return 0.0;
  double decay = 1.0 - std::pow(1.0 + static_cast<double>(s) / settings.inv_gamma, -settings.power);
  decay = std::min(decay, settings.upper());
  return std::max(decay, settings.lower());
}

}  // namespace lrhost::optim
