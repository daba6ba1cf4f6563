// Logged metrics as TensorBoard scalars (one per metric name, e.g. "loss", "eval/success_rate") and
// text records (the resolved config) in `<run>/tensorboard/`, for `tensorboard --logdir` and
// `wandb sync --sync-tensorboard`. A run's first record is a session start at its first step, which
// makes TensorBoard drop what an interrupted earlier run logged from that step on (no duplicated
// steps after a resume).
#pragma once

#include <filesystem>
#include <memory>

#include "host/metrics/metrics_sink.hpp"

namespace lrhost::metrics {

class TensorBoardWriter;

class TensorBoardSink final : public MetricsSink {
 public:
  TensorBoardSink(std::filesystem::path dir, int64_t first_step);
  ~TensorBoardSink() override;

  void write(int64_t step, double wall_time, const std::map<std::string, double>& metrics) override;
  void write_text(const std::string& tag, int64_t step, const std::string& text, double wall_time) override;

 private:
  void start_if_needed(double wall_time);

  std::unique_ptr<TensorBoardWriter> writer_;
  int64_t first_step_;
  bool started_ = false;
};

}  // namespace lrhost::metrics
