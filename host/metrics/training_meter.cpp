// Phase timings, rates and the progress status line of a training run; see training_meter.hpp.
#include "host/metrics/training_meter.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <cmath>

#include "host/util/status_line.hpp"

namespace lrhost::metrics {
namespace {
double seconds_between(TrainingMeter::Clock::time_point from, TrainingMeter::Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}
}  // namespace

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  auto total = static_cast<int64_t>(std::llround(seconds));
  int64_t hours = total / 3600, minutes = total / 60 % 60, secs = total % 60;
  if (hours > 0) return fmt::format("{}:{:02}:{:02}", hours, minutes, secs);
  return fmt::format("{}:{:02}", minutes, secs);
}

TrainingMeter::TrainingMeter(TrainingMeterOptions options) : options_(std::move(options)) {
  start_ = window_start_ = last_mark_ = Clock::now();
  last_draw_ = start_ - std::chrono::hours(1);
  last_step_ = options_.first_step - 1;
}

TrainingMeter::~TrainingMeter() {
  finish();
}

void TrainingMeter::finish() {
  if (options_.draw_status_line) status_line().clear();
  options_.draw_status_line = false;
}

util::StatusLine& TrainingMeter::status_line() const {
  return options_.status_line != nullptr ? *options_.status_line : util::StatusLine::instance();
}

void TrainingMeter::set_last_loss(double loss) {
  last_loss_ = loss;
  has_loss_ = true;
  if (!options_.draw_status_line || steps_done_ == 0) return;
  last_draw_ = Clock::now();
  status_line().show(progress_text(last_step_));
}

void TrainingMeter::mark(const std::string& phase) {
  if (options_.synchronize) options_.synchronize();
  auto now = Clock::now();
  double spent = seconds_between(last_mark_, now);
  last_mark_ = now;
  for (auto& [name, total] : window_phases_) {
    if (name == phase) {
      total += spent;
      return;
    }
  }
  window_phases_.emplace_back(phase, spent);
}

void TrainingMeter::end_step(int64_t step) {
  ++window_steps_;
  ++steps_done_;
  last_step_ = step;
  if (!options_.draw_status_line) return;
  auto now = Clock::now();
  if (seconds_between(last_draw_, now) < options_.redraw_interval_s && step != options_.total_steps) return;
  last_draw_ = now;
  status_line().show(progress_text(step));
}

std::map<std::string, double> TrainingMeter::take_window() {
  std::map<std::string, double> window;
  if (window_steps_ > 0) {
    // The window runs from its start to the last mark, exactly the time the phases were charged, so
    // the phases add up to step_s; what follows the last mark goes to the next window's first phase.
    double steps = static_cast<double>(window_steps_);
    double wall = seconds_between(window_start_, last_mark_);
    for (const auto& [phase, total] : window_phases_) window[phase + "_s"] = total / steps;
    window["step_s"] = wall / steps;
    if (options_.samples_per_step > 0 && wall > 0)
      window["samples_per_s"] = static_cast<double>(options_.samples_per_step) * steps / wall;
    if (options_.flops_per_sample > 0 && options_.samples_per_step > 0 && wall > 0) {
      const double achieved = options_.flops_per_sample * static_cast<double>(options_.samples_per_step) * steps / wall;
      window["tflops"] = achieved / 1e12;
      if (options_.peak_flops > 0) window["mfu"] = achieved / options_.peak_flops;
    }
    // This process's peak resident memory (Linux reports kilobytes); the loader's worker threads
    // are in it, so it is the figure that runs out on a CPU machine.
    rusage usage{};
    if (::getrusage(RUSAGE_SELF, &usage) == 0)
      window["peak_rss_gib"] = static_cast<double>(usage.ru_maxrss) / (1024.0 * 1024.0);
  }
  window_phases_.clear();
  window_steps_ = 0;
  window_start_ = last_mark_;
  return window;
}

double TrainingMeter::elapsed_s() const {
  return seconds_between(start_, Clock::now());
}

double TrainingMeter::steps_per_s() const {
  double elapsed = elapsed_s();
  return elapsed > 0 && steps_done_ > 0 ? static_cast<double>(steps_done_) / elapsed : 0.0;
}

double TrainingMeter::eta_s(int64_t step) const {
  double rate = steps_per_s();
  if (rate <= 0) return -1;
  return static_cast<double>(std::max<int64_t>(options_.total_steps - step, 0)) / rate;
}

std::string TrainingMeter::progress_text(int64_t step) const {
  double percent =
      options_.total_steps > 0 ? 100.0 * static_cast<double>(step) / static_cast<double>(options_.total_steps) : 0.0;
  double rate = steps_per_s();
  std::string text = fmt::format("step {}/{} ({:.1f}%) | {:.2f} steps/s", step, options_.total_steps, percent, rate);
  if (options_.samples_per_step > 0)
    text +=
        fmt::format(" | {:.1f} samples/s", rate * static_cast<double>(options_.samples_per_step * options_.world_size));
  double eta = eta_s(step);
  text +=
      " | elapsed " + format_duration(elapsed_s()) + " | ETA " + (eta < 0 ? std::string("?") : format_duration(eta));
  if (has_loss_) text += fmt::format(" | loss {:.4g}", last_loss_);
  return text;
}

}  // namespace lrhost::metrics
