// `<run>/metrics.jsonl`: one JSON object per logged step — {"step": 50, "time": 1764049200.1, then
// every metric by name} — appended and flushed line by line so it can be read (and plotted) while
// training runs. A resumed run continues the same file: when the file is opened, records at or after
// the first step this run will log (written by the interrupted run past its last checkpoint) are
// dropped, so every step appears once. A non-finite value is written as null (JSON has no NaN).
#pragma once

#include <cstdio>
#include <filesystem>

#include "host/metrics/metrics_sink.hpp"

namespace lrhost::metrics {

class JsonlSink final : public MetricsSink {
 public:
  // `first_step`: the first step this run logs (1 for a fresh run, checkpoint step + 1 when resumed).
  JsonlSink(std::filesystem::path path, int64_t first_step);
  ~JsonlSink() override;
  JsonlSink(const JsonlSink&) = delete;
  JsonlSink& operator=(const JsonlSink&) = delete;

  void write(int64_t step, double wall_time, const std::map<std::string, double>& metrics) override;
  const std::filesystem::path& path() const { return path_; }

 private:
  void open();  // drops records >= first_step_ from an existing file, then opens it for appending

  std::filesystem::path path_;
  int64_t first_step_;
  std::FILE* file_ = nullptr;
};

}  // namespace lrhost::metrics
