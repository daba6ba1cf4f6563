// Where logged metrics go besides the log: a metrics file, TensorBoard, or a sink a recipe adds.
// Sinks receive metrics already reduced across ranks, on the main process only, and open their files
// on the first write, so building one on every rank costs nothing.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace lrhost::metrics {

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  // One logged step: `wall_time` in seconds since the Unix epoch.
  virtual void write(int64_t step, double wall_time, const std::map<std::string, double>& metrics) = 0;
  // A text record (the resolved config, say); sinks without text support ignore it.
  virtual void write_text(const std::string& /*tag*/, int64_t /*step*/, const std::string& /*text*/,
                          double /*wall_time*/) {}
};

// Seconds since the Unix epoch, the wall time sinks record.
double unix_time_now();

}  // namespace lrhost::metrics
