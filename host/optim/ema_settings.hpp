// A recipe's `ema` table: LeRobot main's EMAConfig (lerobot-train --ema.*, reference ema.md §1) with
// its defaults and checks, plus lrhost's on_main_only, and the decay rule LeRobot gets from
// diffusers' EMAModel (constructed with use_ema_warmup=True, decay=max_decay, min_decay).
//
//   ema = { enable = false,
//           decay = -1,                 -- -1: none (the warm-up schedule); else a constant in [0, 1]
//           update_after_step = 0,      -- updates up to this step copy the weights
//           inv_gamma = 1.0, power = 0.75, min_decay = 0.0, max_decay = 0.9999,
//           use_for_eval = true,        -- evaluations during training use the EMA weights
//           on_main_only = false }      -- DDP: only rank 0 keeps the shadow (LeRobot's way)
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace lrhost::optim {

struct EmaSettings {
  bool enable = false;
  std::optional<double> decay;  // a constant decay; nullopt: the warm-up schedule
  int64_t update_after_step = 0;
  double inv_gamma = 1.0, power = 0.75, min_decay = 0.0, max_decay = 0.9999;
  bool use_for_eval = true;
  bool on_main_only = false;

  // The clamp of the schedule: a constant decay d is min = max = d (LeRobot main's translation), so
  // the first update still copies the weights.
  double lower() const { return decay ? *decay : min_decay; }
  double upper() const { return decay ? *decay : max_decay; }

  // ConfigError naming `where`.key for an unknown key, a wrong type or a value LeRobot's
  // EMAConfig.__post_init__ refuses (min/max order, inv_gamma or power <= 0, a negative
  // update_after_step, a decay outside [0, 1], decay together with min/max_decay).
  static EmaSettings read(const nlohmann::json& table, const std::string& where);
  nlohmann::ordered_json to_json() const;
};

// The recipe's default `ema` table (every key, EMA off), in every shipped recipe.
nlohmann::ordered_json default_ema_table();

// diffusers' EMAModel.get_decay(optimization_step) as LeRobot main configures it: with
// s = max(0, optimization_step - update_after_step - 1), 0 while s == 0 (the shadow becomes the
// weights), else 1 - (1 + s / inv_gamma) ** -power clamped to [lower, upper] (min first, then max,
// as diffusers applies them). In double precision, as Python computes it.
double ema_decay(const EmaSettings& settings, int64_t optimization_step);

}  // namespace lrhost::optim
