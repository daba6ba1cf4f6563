// Fan-out of logged records to the log and the sinks; see metrics_log.hpp.
#include "host/metrics/metrics_log.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

namespace lrhost::metrics {

double unix_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string format_metrics(const std::map<std::string, double>& metrics) {
  std::string text;
  for (const auto& [name, value] : metrics) {
    if (!text.empty()) text += ' ';
    text += name + "=" + fmt::format("{:.4g}", value);
  }
  return text;
}

void MetricsLog::record(int64_t step, const std::map<std::string, double>& metrics, const std::string& prefix) {
  std::string head = prefix.empty() ? "step " + std::to_string(step) : prefix;
  spdlog::info("{} | {}", head, format_metrics(metrics));
  double now = unix_time_now();
  for (const auto& sink : sinks_) sink->write(step, now, metrics);
}

void MetricsLog::record_text(const std::string& tag, int64_t step, const std::string& text) {
  double now = unix_time_now();
  for (const auto& sink : sinks_) sink->write_text(tag, step, text, now);
}

}  // namespace lrhost::metrics
