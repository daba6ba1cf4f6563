// One logged record of a training run, delivered everywhere it goes: the log line (rank 0's console
// and rank0.log) and every sink (metrics.jsonl, TensorBoard, a recipe's own). The caller has already
// reduced the metrics across ranks; only the main process records.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "host/metrics/metrics_sink.hpp"

namespace lrhost::metrics {

class MetricsLog {
 public:
  void add_sink(std::shared_ptr<MetricsSink> sink) { sinks_.push_back(std::move(sink)); }
  std::size_t sink_count() const { return sinks_.size(); }

  // Logs "<prefix> | name=value ..." (prefix: the progress text, or "step k") and writes every sink.
  void record(int64_t step, const std::map<std::string, double>& metrics, const std::string& prefix);
  void record_text(const std::string& tag, int64_t step, const std::string& text);

 private:
  std::vector<std::shared_ptr<MetricsSink>> sinks_;
};

// "name=value" pairs in name order, values with 4 significant digits.
std::string format_metrics(const std::map<std::string, double>& metrics);

}  // namespace lrhost::metrics
